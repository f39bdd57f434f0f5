"""The experiment config: `schema` holds every key with its type, default and meaning (the one
place a default lives); `loader` reads a YAML file (with `extends:` and `key=value` overrides)
into a checked `Config`, naming the file and key of any mistake. Every stage takes a `Config`."""
