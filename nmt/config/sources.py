"""Where parallel sentences come from: the values of `data.corpus`, `data.dev` and `data.test`.

Each names one corpus or a list of them, in one of three forms (OpenNMT-py and Joey NMT read
the same kinds of files):

    data/raw/cmn-eng/cmn.txt                          # TatoebaTsv: English <TAB> Chinese [<TAB> credit]
    {tsv: mine.tsv, zh_column: 1, en_column: 2}       # TsvSource: the columns you name (1-based)
    {zh: opus/train.zh.gz, en: opus/train.en.gz}      # PlainTextPair: one sentence a line in each

Any file may be gzip or xz compressed (recognised by its first bytes, not its name). A pair of
files must have as many lines as each other (nmt/data/sources.py reads them).

The loader parses a value once, before any work starts, into `Sources`; `Sources.plain()` gives
back the form it was written in. That plain form, not these classes, is what a saved config, a
checkpoint and the prepared-data hash hold, so a config's cache folder never depends on them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

import yaml

from nmt.errors import NMTError

FORMS = ("a TSV path (the Tatoeba format), {tsv: PATH, zh_column: N, en_column: M}, "
         "{zh: PATH, en: PATH} (plain-text files), or a list of these")


@dataclass(frozen=True)
class TatoebaTsv:
    """Tatoeba's TSV: English <TAB> Chinese [<TAB> credit], 2 or 3 columns a line."""

    path: str  # as written: the prepared-data hash holds this text

    def files(self) -> tuple[Path, ...]:
        return (Path(self.path),)

    def plain(self) -> str:
        return self.path


@dataclass(frozen=True)
class TsvSource:
    """A TSV file with the columns named (1-based); any other columns are ignored."""

    path: str
    # None: not named in the config (the second column for Chinese, the first for English);
    # kept apart from a named 2 or 1 so that the config saves as it was written
    zh_column: int | None = None
    en_column: int | None = None

    @property
    def zh_index(self) -> int:
        """The Chinese column, 0-based."""
        return (self.zh_column or 2) - 1

    @property
    def en_index(self) -> int:
        """The English column, 0-based."""
        return (self.en_column or 1) - 1

    def files(self) -> tuple[Path, ...]:
        return (Path(self.path),)

    def plain(self) -> dict:
        named = {"zh_column": self.zh_column, "en_column": self.en_column}
        return {"tsv": self.path, **{key: value for key, value in named.items() if value is not None}}


@dataclass(frozen=True)
class PlainTextPair:
    """Two plain-text files, line k of one the translation of line k of the other."""

    zh: str
    en: str

    def files(self) -> tuple[Path, ...]:
        return (Path(self.zh), Path(self.en))

    def plain(self) -> dict:
        return {"zh": self.zh, "en": self.en}


Source = Union[TatoebaTsv, TsvSource, PlainTextPair]


class Sources:
    """The corpora one key names, in the order named; immutable.

    Not a dataclass: the schema reads a dataclass-typed key as a section of keys of its own."""

    __slots__ = ("items", "listed")
    items: tuple[Source, ...]
    listed: bool  # written as a YAML list (of one, maybe): saved back the same way

    def __init__(self, items: tuple[Source, ...], listed: bool = False):
        object.__setattr__(self, "items", tuple(items))
        object.__setattr__(self, "listed", listed)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Sources are immutable: cannot set {name}")

    def __reduce__(self):  # copies and pickles (a member's process gets its config) rebuild it
        return Sources, (self.items, self.listed)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Sources)
                and (self.items, self.listed) == (other.items, other.listed))

    def __hash__(self) -> int:
        return hash((self.items, self.listed))

    def __repr__(self) -> str:
        return f"Sources({self.items!r}, listed={self.listed})"

    def __iter__(self) -> Iterator[Source]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def files(self) -> list[Path]:
        """Every file named, in order."""
        return [path for source in self.items for path in source.files()]

    @property
    def name(self) -> str:
        """The files, for messages: `a.tsv, b.zh + b.en`."""
        return ", ".join(" + ".join(str(path) for path in source.files()) for source in self.items)

    def plain(self) -> Any:
        """The YAML value this was parsed from."""
        if self.listed:
            return [source.plain() for source in self.items]
        return self.items[0].plain()

    def __str__(self) -> str:
        """The value as a `data.corpus=...` override writes it."""
        plain = self.plain()
        if isinstance(plain, str):
            return plain
        return yaml.safe_dump(plain, default_flow_style=True, sort_keys=False, width=1 << 30).strip()


def parse_sources(value: Any) -> Sources | None:
    """The sources a config value names (None for null). An NMTError for anything else, its
    message going on from the key's name: `f"{key}{error}"` reads `data.corpus[1] = 5: ...`."""
    return None if value is None else parse_corpus(value)


def parse_corpus(value: Any) -> Sources:
    """`parse_sources` for data.corpus, which must name something."""
    if value is None:
        raise NMTError(f" is null; name the training corpus: {FORMS}")
    if isinstance(value, list):
        if not value:
            raise NMTError(f" is an empty list; name at least one corpus ({FORMS})")
        return Sources(tuple(_one(item, f"[{i}]") for i, item in enumerate(value)), listed=True)
    return Sources((_one(value, ""),))


def _one(item: Any, where: str) -> Source:
    if isinstance(item, str) and item:
        return TatoebaTsv(item)
    if not isinstance(item, dict):
        raise NMTError(f"{where} = {item!r}: not a corpus; use {FORMS}")
    keys = set(item)
    if keys == {"zh", "en"}:
        if not all(isinstance(item[k], str) and item[k] for k in ("zh", "en")):
            raise NMTError(f"{where}: zh and en must be file paths")
        return PlainTextPair(item["zh"], item["en"])
    if "tsv" in keys and keys <= {"tsv", "zh_column", "en_column"}:
        if not (isinstance(item["tsv"], str) and item["tsv"]):
            raise NMTError(f"{where}: tsv must be a file path")
        source = TsvSource(item["tsv"], item.get("zh_column"), item.get("en_column"))
        _check_columns(item, source, where)
        return source
    raise NMTError(f"{where} has the keys {sorted(keys)}; use {FORMS}")


def _check_columns(item: dict, source: TsvSource, where: str) -> None:
    named = [item[key] for key in ("zh_column", "en_column") if key in item]
    if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in named) \
            or source.zh_index == source.en_index:
        raise NMTError(f"{where}: zh_column and en_column must be two different column numbers "
                       f">= 1 (1 is the first column), got {item.get('zh_column', 2)} and "
                       f"{item.get('en_column', 1)}")
