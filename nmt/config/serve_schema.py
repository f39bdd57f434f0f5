"""The serve section of the config schema: how `make serve` bounds its work. Like
nmt/config/schema.py, each key's `#` comment is its meaning in docs/config.md."""

from __future__ import annotations

from dataclasses import dataclass, field

from nmt.config.checks import check, positive

# the default run, always loaded, and at least one other that a request may name
at_least_two = check(lambda v: v >= 2, "a number >= 2 (the default run and at least one other)")


@dataclass
class ServeConfig:
    """`make serve`: what one request may ask, and how much waits before the server says busy.
    Every limit is declared in /openapi.json; one search runs at a time, in one thread."""

    # lines of one POST /api/translate
    max_lines: int = field(default=64, metadata=positive)
    # characters of one line of a POST, and of the whole text of a GET
    max_chars: int = field(default=2000, metadata=positive)
    # Lines waiting for the model, beyond which a request is answered 503 with Retry-After (a
    # request alone in the queue is always taken, whatever its size)
    queue_lines: int = field(default=256, metadata=positive)
    # Seconds a request may wait for its translation; past it, 503 instead of a late answer
    deadline_seconds: float = field(default=10.0, metadata=positive)
    # lines decoded together in one search, from the requests waiting with the same beam and
    # n-best (and asking for the same: attention, links)
    batch_lines: int = field(default=64, metadata=positive)
    # Runs loaded at once, the default run included (each holds its models and a decoding
    # thread); loading one more unloads the least recently used other than the default, once its
    # thread has answered what it holds. A request for it later loads it again
    max_runs: int = field(default=4, metadata=at_least_two)
