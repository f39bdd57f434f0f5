"""Where parallel sentences come from: `data.corpus`, `data.dev` and `data.test` in the YAML.

Each names one corpus or a list of them, in one of three forms (OpenNMT-py and Joey NMT read
the same kinds of files):

    data/raw/cmn-eng/cmn.txt                          # the Tatoeba TSV: English <TAB> Chinese [<TAB> credit]
    {tsv: mine.tsv, zh_column: 1, en_column: 2}       # a TSV with the columns you name (1-based)
    {zh: opus/train.zh.gz, en: opus/train.en.gz}      # two plain-text files, one sentence a line

Any file may be gzip or xz compressed (recognised by its first bytes, not its name). A pair of
files must have as many lines as each other: one that does not is refused with both names and
counts, never zipped short. `read_source` streams a source's pairs one at a time, so a corpus of
millions of lines costs no memory; it also feeds every byte it reads to a SHA-256, so the
prepare stage learns the input's checksum without reading it twice.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nmt.data.corpus import Pair, TsvReader
from nmt.errors import NMTError

FORMS = ("a TSV path (the Tatoeba format), {tsv: PATH, zh_column: N, en_column: M}, "
         "{zh: PATH, en: PATH} (plain-text files), or a list of these")


@dataclass(frozen=True)
class Source:
    """One corpus: a TSV file (columns 0-based here) or a pair of plain-text files."""

    kind: str  # "tsv" or "pair"
    paths: tuple[Path, ...]  # (tsv,) or (zh, en)
    zh_column: int = 1
    en_column: int = 0
    tatoeba: bool = False  # the plain form: 2 or 3 columns expected, the credit ignored

    @property
    def name(self) -> str:
        return " + ".join(str(p) for p in self.paths)


def parse_sources(value: Any, key: str) -> list[Source]:
    """The sources a config value names; an NMTError naming `key` for anything else."""
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    if not items:
        raise NMTError(f"{key} is an empty list; name at least one corpus ({FORMS})")
    return [_one(item, f"{key}[{i}]" if isinstance(value, list) else key)
            for i, item in enumerate(items)]


def _one(item: Any, key: str) -> Source:
    if isinstance(item, str) and item:
        return Source("tsv", (Path(item),), tatoeba=True)
    if not isinstance(item, dict):
        raise NMTError(f"{key} = {item!r}: not a corpus; use {FORMS}")
    keys = set(item)
    if keys == {"zh", "en"}:
        if not all(isinstance(item[k], str) and item[k] for k in ("zh", "en")):
            raise NMTError(f"{key}: zh and en must be file paths")
        return Source("pair", (Path(item["zh"]), Path(item["en"])))
    if "tsv" in keys and keys <= {"tsv", "zh_column", "en_column"}:
        zh, en = item.get("zh_column", 2), item.get("en_column", 1)
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 1 for c in (zh, en)) \
                or zh == en:
            raise NMTError(f"{key}: zh_column and en_column must be two different column "
                           f"numbers >= 1 (1 is the first column), got {zh} and {en}")
        return Source("tsv", (Path(item["tsv"]),), zh - 1, en - 1)
    raise NMTError(f"{key} has the keys {sorted(keys)}; use {FORMS}")


def source_files(value: Any, key: str) -> list[Path]:
    """Every file the config value names, in order."""
    return [path for source in parse_sources(value, key) for path in source.paths]


def read_source(source: Source, skipped: Counter, checksums: dict[str, str]) -> Iterator[Pair]:
    """The source's good pairs in file order (Pair.line is the 1-based line number); bad lines
    are counted in `skipped` by reason. When the files have been read to their end, their
    SHA-256 (of the bytes on disk) is in `checksums` under their path."""
    if source.kind == "tsv":
        path = source.paths[0]
        with open_text(path) as (lines, digest):
            reader = TsvReader(path, source.en_column, source.zh_column, source.tatoeba)
            yield from reader.pairs(lines)
            skipped.update(reader.skipped)
            checksums[str(path)] = digest.hexdigest()
        return
    zh_path, en_path = source.paths
    with open_text(zh_path) as (zh_lines, zh_digest), open_text(en_path) as (en_lines, en_digest):
        number = 0
        for number, (zh, en) in enumerate(_zip_exact(zh_lines, en_lines, zh_path, en_path), 1):
            zh, en = _decode(zh), _decode(en)
            if zh is None or en is None:
                skipped["invalid_utf8"] += 1
            elif not zh.strip() and not en.strip():
                skipped["blank_line"] += 1
            elif not zh.strip() or not en.strip():
                skipped["empty_side"] += 1
            else:
                yield Pair(zh.strip(), en.strip(), number)
        if number == 0:
            raise NMTError(f"{zh_path} and {en_path} are empty; data.corpus must name files "
                           f"with one sentence a line")
        checksums[str(zh_path)], checksums[str(en_path)] = zh_digest.hexdigest(), en_digest.hexdigest()


def _zip_exact(zh: Iterator[bytes], en: Iterator[bytes], zh_path: Path,
               en_path: Path) -> Iterator[tuple[bytes, bytes]]:
    """Line pairs of the two files; an NMTError with both counts when one ends first."""
    count = 0
    for count, zh_line in enumerate(zh, start=1):
        en_line = next(en, None)
        if en_line is None:
            zh_total = count + sum(1 for _ in zh)
            raise _mismatch(zh_path, zh_total, en_path, count - 1)
        yield zh_line, en_line
    rest = sum(1 for _ in en)
    if rest:
        raise _mismatch(zh_path, count, en_path, count + rest)


def _mismatch(zh_path: Path, zh_lines: int, en_path: Path, en_lines: int) -> NMTError:
    return NMTError(f"{zh_path} has {zh_lines} lines but {en_path} has {en_lines}: the two sides "
                    f"of a corpus must have one line per sentence pair; fix the files (nothing "
                    f"was prepared)")


def _decode(raw: bytes) -> str | None:
    try:
        return raw.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
    except UnicodeDecodeError:
        return None


class _Hashing(io.RawIOBase):
    """A file's bytes, passed through a SHA-256 as they are read."""

    def __init__(self, file, digest):
        self.file, self.digest = file, digest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self.file.readinto(buffer)
        if count:
            self.digest.update(memoryview(buffer)[:count])
        return count


class open_text:
    """`with open_text(path) as (lines, digest)`: the file's lines as bytes (each ending in
    b"\\n", the last one maybe not), decompressed when gzip or xz, and the SHA-256 of the bytes
    read so far. Leaving the block reads the rest of the file, so the digest is the whole file's."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __enter__(self):
        if not self.path.is_file():
            raise NMTError(f"{self.path}: corpus file not found; run `make data` to fetch the "
                           f"Tatoeba corpus, or set data.corpus (or data.dev, data.test) to "
                           f"where your files are")
        self.raw = open(self.path, "rb")
        magic = self.raw.read(6)
        self.raw.seek(0)
        if magic.startswith(b"PK\x03\x04"):
            self.raw.close()
            raise NMTError(f"{self.path}: this is a zip archive, not the corpus text; extract "
                           f"cmn.txt from it (`make data` does this) and point data.corpus at that")
        self.digest = hashlib.sha256()
        hashed = io.BufferedReader(_Hashing(self.raw, self.digest), 1 << 20)
        if magic.startswith(b"\x1f\x8b"):
            stream = gzip.GzipFile(fileobj=hashed)
        elif magic.startswith(b"\xfd7zXZ\x00"):
            stream = lzma.LZMAFile(hashed)
        else:
            stream = hashed
        self.hashed, self.stream = hashed, stream
        return _checked_lines(stream, self.path), self.digest

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                while self.hashed.read(1 << 20):  # the rest, for the checksum
                    pass
        finally:
            self.stream.close()
            self.raw.close()


def _checked_lines(stream, path: Path) -> Iterator[bytes]:
    try:
        for number, line in enumerate(stream, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if b"\x00" in line:  # NUL bytes never occur in text
                raise NMTError(f"{path}: this is a binary file, not text (a NUL byte on line "
                               f"{number}); data.corpus must name text files (UTF-8, one pair "
                               f"or sentence a line)")
            yield line
    except (OSError, EOFError, lzma.LZMAError) as error:
        raise NMTError(f"{path}: cannot read it ({error}); is the compressed file complete?") from None
