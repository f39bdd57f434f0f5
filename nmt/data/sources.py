"""Read the corpora that `data.corpus`, `data.dev` and `data.test` name (their forms, parsed
once when the config loads: nmt/config/sources.py).

`read_source` streams a source's pairs one at a time, so a corpus of millions of lines costs no
memory; the SHA-256 of every file it reads to the end lands in `checksums`. A pair of files must
have as many lines as each other: one that does not is refused with both names and counts, never
zipped short.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from nmt.config.sources import PlainTextPair, Source, TatoebaTsv
from nmt.data.corpus import Pair, TsvReader
from nmt.data.text_file import open_text
from nmt.errors import NMTError


def read_source(source: Source, skipped: Counter, checksums: dict[str, str]) -> Iterator[Pair]:
    """The source's good pairs in file order (Pair.line is the 1-based line number); bad lines
    are counted in `skipped` by reason. When the files have been read to their end, their
    SHA-256 (of the bytes on disk) is in `checksums` under their path."""
    if isinstance(source, PlainTextPair):
        yield from _read_pair(Path(source.zh), Path(source.en), skipped, checksums)
        return
    path = Path(source.path)
    if isinstance(source, TatoebaTsv):  # 2 or 3 columns expected, the credit ignored
        reader = TsvReader(path)
    else:
        reader = TsvReader(path, source.en_index, source.zh_index, tatoeba=False)
    with open_text(path) as (lines, digest):
        yield from reader.pairs(lines)
        skipped.update(reader.skipped)
        checksums[str(path)] = digest.hexdigest()


def _read_pair(zh_path: Path, en_path: Path, skipped: Counter,
               checksums: dict[str, str]) -> Iterator[Pair]:
    with open_text(zh_path) as (zh_lines, zh_digest), open_text(en_path) as (en_lines, en_digest):
        number = 0
        for number, (zh_raw, en_raw) in enumerate(_zip_exact(zh_lines, en_lines, zh_path, en_path), 1):
            zh, en = _decode(zh_raw), _decode(en_raw)
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
