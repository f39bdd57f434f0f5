"""docs/config.md, generated from the schema: every key, its type, default, allowed values and
what it means.

A key's meaning is the `#` comment beside it in nmt/config/schema.py (the model section's in
nmt/config/model_schema.py): the comment lines just
above the key, then the one trailing its line(s), read from the source with `tokenize`, so the
schema stays the one place it is written. A comment block with a blank line after it heads the
keys below it (e.g. "Transformer only") and starts a table of their own.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import re
import tokenize
import typing
from typing import Any, Literal

from nmt.config import clean_schema, model_schema, schema, serve_schema, student_schema
from nmt.config.schema import Config
from nmt.config.sources import Sources

INTRO = """# Configuration keys

An experiment is one YAML file in `configs/` that names only what differs from the defaults
below, section by section (`data:`, `model:`, `training:`, `search:`, `eval:`). The model
section holds the keys both families share and one section per family, `model.rnn:` or
`model.transformer:`: only the one `model.architecture` names may be set. A file can start
from another with `extends: other.yaml` (a path relative to itself) and change a few keys, and
any key can be overridden on the command line as `section.key=value`, e.g.
`make train ARGS="training.lr=3e-4 model.rnn.attention=dot"`. A file or override that changes
`model.architecture` leaves the other family's section it inherits behind, so
`make train ARGS="model.architecture=transformer"` trains a Transformer on the default's data.
Every key, type and value is checked before any work starts; a typo names the nearest valid key.
`python scripts/show_config.py configs/tatoeba.yaml` prints an experiment's resolved config.

This page is generated from `nmt/config/schema.py`, `model_schema.py`, `serve_schema.py`, `clean_schema.py` and `student_schema.py` by `make docs`
(`python scripts/config_docs.py > docs/config.md`); edit the schema's comments, not this page.
"""

TABLE_HEAD = ["| key | type | default | allowed | meaning |", "|---|---|---|---|---|"]


@dataclasses.dataclass
class KeyComments:
    """What the schema's source says about its keys, by (class name, field name)."""

    meaning: dict[tuple[str, str], str]
    heading: dict[tuple[str, str], str]  # a heading comment just before this field, if any


def read_comments() -> KeyComments:
    """The comment of every field of every class in the schema's sources (nmt/config/schema.py
    and the sections of their own: nmt/config/model_schema.py, serve_schema.py), and the
    headings."""
    found = KeyComments({}, {})
    for module in (schema, model_schema, serve_schema, clean_schema, student_schema):
        _read_module_comments(inspect.getsource(module), found)
    return found


def _read_module_comments(source: str, found: KeyComments) -> None:
    lines = source.splitlines()
    comments = _comment_lines(source)
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                key = (node.name, statement.target.id)
                above = _block_above(comments, statement.lineno)
                assert statement.end_lineno is not None  # ast.parse sets it on every node
                trailing = [comments[row][0] for row in range(statement.lineno, statement.end_lineno + 1)
                            if row in comments and not comments[row][1]]
                found.meaning[key] = " ".join(above + trailing)
                heading = _heading_above(comments, lines, statement.lineno - len(above))
                if heading:
                    found.heading[key] = heading


def key_comments() -> dict[tuple[str, str], str]:
    """{(class name, field name): its comment} from the schema's source."""
    return read_comments().meaning


def _comment_lines(source: str) -> dict[int, tuple[str, bool]]:
    """{line number: (its comment's text, whether the line holds nothing but the comment)}."""
    comments: dict[int, str] = {}
    code_rows: set[int] = set()
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
              tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string.lstrip("#").strip()
        elif token.type not in layout:
            code_rows.update(range(token.start[0], token.end[0] + 1))
    return {row: (text, row not in code_rows) for row, text in comments.items()}


def _block_above(comments: dict[int, tuple[str, bool]], row: int) -> list[str]:
    """The texts of the comment-only lines right above line `row`, top first."""
    block: list[str] = []
    while (row - 1) in comments and comments[row - 1][1]:
        row -= 1
        block.insert(0, comments[row][0])
    return block


def _heading_above(comments: dict[int, tuple[str, bool]], lines: list[str], row: int) -> str:
    """A comment block separated by blank lines from line `row` (and from the code above it)."""
    blank = row - 1
    while blank >= 1 and not lines[blank - 1].strip():
        blank -= 1
    if blank == row - 1:
        return ""
    heading = _block_above(comments, blank + 1)
    return " ".join(heading)


def type_name(kind: Any) -> str:
    """A type as a reader writes it: int, optional float, one of `a`, `b`, list of str."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union and type(None) in args:
        inner = next(a for a in args if a is not type(None))
        return f"optional {type_name(inner)}"
    if origin is Literal:
        return "one of " + ", ".join(f"`{_yaml(a)}`" for a in args)
    if origin is list:
        return f"list of {type_name(args[0])}"
    if kind is Sources:
        return "path, mapping or list"
    return getattr(kind, "__name__", str(kind))


def _yaml(value: Any) -> str:
    """A value as YAML writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):
        return "[" + ", ".join(_yaml(item) for item in value) + "]"
    return str(value)


def _default(f: dataclasses.Field) -> Any:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return f.default


def _cell(text: str) -> str:
    """Text for a table cell: outside `code`, escape what Markdown would read as markup; `|`
    everywhere, as a table needs."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[i] = re.sub(r"([<*\\])", r"\\\1", parts[i])
    return "`".join(parts).replace("|", r"\|")


def section_tables(cls: type, prefix: str, comments: KeyComments) -> list[str]:
    """The Markdown tables of one section's keys: one, plus one per heading comment."""
    hints = typing.get_type_hints(cls)
    rows = list(TABLE_HEAD)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            continue
        heading = comments.heading.get((cls.__name__, f.name))
        if heading:
            rows += ["", f"### {heading.rstrip(':')}", "", *TABLE_HEAD]
        meaning = comments.meaning.get((cls.__name__, f.name), "")
        allowed = f.metadata.get("allowed", "")
        rows.append(f"| `{prefix}{f.name}` | {_cell(type_name(hints[f.name]))} | "
                    f"`{_yaml(_default(f))}` | {_cell(allowed)} | {_cell(meaning)} |")
    return rows


def config_markdown() -> str:
    """The whole page."""
    comments = read_comments()
    parts = [INTRO, "## Top level", "", *section_tables(Config, "", comments)]
    for name, cls in sections().items():
        doc = " ".join(inspect.cleandoc(cls.__doc__ or "").split())
        parts += ["", f"## `{name}:`", "", doc, "", *section_tables(cls, f"{name}.", comments)]
    return "\n".join(parts) + "\n"


def sections(cls: type = Config, prefix: str = "") -> dict[str, type]:
    """{dotted section name: its dataclass}, in the schema's order, each section followed by
    the sections inside it (model, model.rnn, model.transformer)."""
    hints = typing.get_type_hints(cls)
    found: dict[str, type] = {}
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            found[f"{prefix}{f.name}"] = hints[f.name]
            found |= sections(hints[f.name], f"{prefix}{f.name}.")
    return found


def key_descriptions() -> dict[str, str]:
    """{dotted key: its comment} for every key of the schema, top-level keys first."""
    meaning = key_comments()
    classes = {"": Config} | {f"{name}.": cls for name, cls in sections().items()}
    return {f"{prefix}{f.name}": meaning.get((cls.__name__, f.name), "")
            for prefix, cls in classes.items() for f in dataclasses.fields(cls)
            if f"{prefix}{f.name}." not in classes}


def schema_keys() -> list[str]:
    """Every dotted key of the schema."""
    return list(key_descriptions())
