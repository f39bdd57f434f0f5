"""Read the Tatoeba TSV (`English <TAB> Chinese <TAB> attribution`) as it really is.

The file may start with a UTF-8 byte-order mark, end lines with CRLF, and hold blank lines, lines
with the wrong number of columns, an empty side or bytes that are not UTF-8. Such lines are skipped
and counted by reason; the first few are logged with their line numbers. A file that is missing,
empty, not text, or mostly bad stops with an NMTError that says what to do.

The attribution column is credit for the sentences' authors: it stays in the corpus file and is
not carried into the pairs, since nothing downstream needs it.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from nmt.errors import NMTError

log = logging.getLogger(__name__)

REASONS = {
    "blank_line": "blank line",
    "wrong_columns": "expected 2 or 3 tab-separated columns",
    "empty_side": "an empty English or Chinese side",
    "invalid_utf8": "bytes that are not UTF-8",
}
MAX_BAD_FRACTION = 0.5  # above this the file is probably not the corpus at all
REPORT_FIRST = 5  # bad lines logged one by one; the rest are only counted
FORMAT = "one pair a line: English <TAB> Chinese [<TAB> attribution], UTF-8"
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")


class Pair(NamedTuple):
    zh: str
    en: str
    line: int  # 1-based line number in the corpus file


@dataclass
class Corpus:
    path: Path
    pairs: list[Pair]
    lines_read: int  # every line in the file, blank ones included
    skipped: dict[str, int] = field(default_factory=dict)  # reason → lines


def read_corpus(path: str | Path) -> Corpus:
    """All good pairs of the TSV at `path`, in file order, with counts of the skipped lines."""
    path = Path(path)
    data = _read_bytes(path)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()  # the final line end does not start another line
    pairs: list[Pair] = []
    skipped: Counter[str] = Counter()
    for number, raw in enumerate(lines, start=1):
        pair, reason = _parse_line(raw.rstrip(b"\r"), number)
        if reason is None:
            pairs.append(pair)
            continue
        skipped[reason] += 1
        bad = sum(skipped.values()) - skipped["blank_line"]
        if reason != "blank_line" and bad <= REPORT_FIRST:
            log.warning("%s:%d: skipped, %s: %r", path, number, REASONS[reason], raw[:80])
    corpus = Corpus(path, pairs, len(lines), dict(sorted(skipped.items())))
    _check_mostly_good(corpus)
    return corpus


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise NMTError(f"{path}: corpus file not found; run `make data` to fetch it, or set "
                       f"data.corpus=PATH to where it is")
    data = path.read_bytes()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise NMTError(f"{path}: the corpus file is empty; fetch it again with `make data` "
                       f"(expected {FORMAT})")
    if data.startswith(b"PK\x03\x04"):
        raise NMTError(f"{path}: this is a zip archive, not the corpus text; extract cmn.txt "
                       f"from it (`make data` does this) and point data.corpus at that")
    if b"\x00" in data:  # NUL bytes never occur in text
        raise NMTError(f"{path}: this is a binary file, not text; data.corpus must name the "
                       f"TSV corpus ({FORMAT})")
    return data


def _parse_line(raw: bytes, number: int) -> tuple[Pair | None, str | None]:
    if not raw.strip():
        return None, "blank_line"
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "invalid_utf8"
    columns = line.split("\t")
    if len(columns) not in (2, 3):
        return None, "wrong_columns"
    en, zh = columns[0].strip(), columns[1].strip()
    if not en or not zh:
        return None, "empty_side"
    return Pair(zh, en, number), None


def _check_mostly_good(corpus: Corpus) -> None:
    bad = sum(corpus.skipped.values()) - corpus.skipped.get("blank_line", 0)
    content = corpus.lines_read - corpus.skipped.get("blank_line", 0)
    if bad:
        counts = ", ".join(f"{REASONS[r]}: {n}" for r, n in corpus.skipped.items())
        log.warning("%s: skipped %d of %d lines (%s)", corpus.path, bad, content, counts)
    if content == 0:
        raise NMTError(f"{corpus.path}: only blank lines; fetch the corpus again with "
                       f"`make data` (expected {FORMAT})")
    if bad > MAX_BAD_FRACTION * content:
        counts = ", ".join(f"{n} with {REASONS[r]}" for r, n in corpus.skipped.items())
        raise NMTError(f"{corpus.path}: {bad} of {content} lines are unusable ({counts}); this "
                       f"does not look like the corpus. Expected {FORMAT}; fetch it again with "
                       f"`make data` or fix data.corpus")
    swapped = sum(1 for p in corpus.pairs if _CJK.search(p.en) and not _CJK.search(p.zh))
    if swapped > MAX_BAD_FRACTION * len(corpus.pairs):
        raise NMTError(f"{corpus.path}: the first column holds Chinese on {swapped} of "
                       f"{len(corpus.pairs)} lines; the columns look swapped (expected {FORMAT})")
