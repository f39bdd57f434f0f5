"""docs/config.md, generated from the schema: every key, its type, default, allowed values and
what it means.

The meaning is the `#` comment beside the key in nmt/config/schema.py (on its line, or on the
lines just above it), read from the source, so the schema stays the one place it is written.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import typing
from typing import Any, Literal

from nmt.config import schema
from nmt.config.schema import Config

INTRO = """# Configuration keys

An experiment is one YAML file in `configs/` that names only what differs from the defaults
below; `extends: other.yaml` starts from another experiment, and any key can be overridden on the
command line with a dotted name: `make train ARGS="training.lr=3e-4 model.attention=dot"`. Every
key, type and value is checked before any work starts; a typo names the nearest valid key.
`python scripts/show_config.py configs/tatoeba.yaml` prints an experiment's resolved config.

This page is generated from `nmt/config/schema.py` by `make docs`; edit the schema, not this page.
"""


def key_comments() -> dict[tuple[str, str], str]:
    """{(class name, field name): its comment} from the schema's source."""
    source = inspect.getsource(schema)
    lines = source.splitlines()
    comments = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                comments[(node.name, statement.target.id)] = _comment(lines, statement)
    return comments


def _comment(lines: list[str], statement: ast.AnnAssign) -> str:
    """The comment block just above the statement, then the one trailing its lines."""
    above, row = [], statement.lineno - 2
    while row >= 0 and lines[row].strip().startswith("#"):
        above.insert(0, lines[row].strip().lstrip("#").strip())
        row -= 1
    trailing = []
    for row in range(statement.lineno - 1, statement.end_lineno):
        code, hash_, comment = lines[row].partition("  # ")
        if hash_:
            trailing.append(comment.strip())
    return " ".join(above + trailing)


def type_name(kind: Any) -> str:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return f"{type_name(inner)} or null"
    if origin is Literal:
        return "one of " + ", ".join(f"`{_yaml(a)}`" for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    return getattr(kind, "__name__", str(kind))


def _yaml(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def section_table(cls: type, prefix: str, comments: dict) -> list[str]:
    hints = typing.get_type_hints(cls)
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            continue
        meaning = comments.get((cls.__name__, f.name), "")
        allowed = f.metadata.get("allowed")
        if allowed:
            meaning = f"{meaning.rstrip('.')}. Allowed: {allowed}."
        rows.append(f"| `{prefix}{f.name}` | {type_name(hints[f.name])} | "
                    f"`{_yaml(_default(f))}` | {meaning.replace('|', '/')} |")
    return rows


def config_markdown() -> str:
    """The whole page."""
    comments = key_comments()
    parts = [INTRO, "## Top level", "", *section_table(Config, "", comments)]
    hints = typing.get_type_hints(Config)
    for f in dataclasses.fields(Config):
        cls = hints[f.name]
        if dataclasses.is_dataclass(cls):
            doc = " ".join(inspect.cleandoc(cls.__doc__ or "").split())
            parts += ["", f"## `{f.name}:`", "", doc, "", *section_table(cls, f"{f.name}.", comments)]
    return "\n".join(parts) + "\n"


def schema_keys() -> list[str]:
    """Every dotted key of the schema."""
    hints = typing.get_type_hints(Config)
    keys = []
    for f in dataclasses.fields(Config):
        if dataclasses.is_dataclass(hints[f.name]):
            keys += [f"{f.name}.{g.name}" for g in dataclasses.fields(hints[f.name])]
        else:
            keys.append(f.name)
    return keys
