"""Read a TSV corpus, by default the Tatoeba one (`English <TAB> Chinese <TAB> attribution`), as
it really is, one line at a time (nmt/data/text_file.py opens the file, nmt/data/sources.py
names the columns).

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
from typing import Iterator, NamedTuple

from nmt.data.text_file import open_text
from nmt.errors import NMTError

log = logging.getLogger(__name__)

REASONS = {
    "blank_line": "blank line",
    "wrong_columns": "expected 2 or 3 tab-separated columns",
    "too_few_columns": "fewer tab-separated columns than data.corpus names",
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
    """All good pairs of the Tatoeba TSV at `path`, in file order, with counts of the skipped
    lines: the whole corpus in memory, for small files and tests (prepare streams instead)."""
    path = Path(path)
    reader = TsvReader(path)
    with open_text(path) as (lines, _):
        pairs = list(reader.pairs(lines))
    return Corpus(path, pairs, reader.lines_read, dict(sorted(reader.skipped.items())))


class TsvReader:
    """Pairs from the lines of one TSV; after the last one, `finish` checks the file as a whole.

    `tatoeba`: 2 or 3 columns, English first (a third, the credit, is ignored); else any number
    of columns, as long as the two named ones are there."""

    def __init__(self, path: Path, en_column: int = 0, zh_column: int = 1, tatoeba: bool = True):
        self.path, self.en_column, self.zh_column, self.tatoeba = path, en_column, zh_column, tatoeba
        self.skipped: Counter[str] = Counter()
        self.lines_read = self.swapped = self.good = 0

    def pairs(self, lines) -> Iterator[Pair]:
        for number, raw in enumerate(lines, start=1):
            self.lines_read = number
            pair, reason = self._parse(raw.rstrip(b"\n").rstrip(b"\r"), number)
            if reason is None:
                assert pair is not None  # _parse gives a pair exactly when it gives no reason
                self.good += 1
                self.swapped += bool(_CJK.search(pair.en) and not _CJK.search(pair.zh))
                yield pair
                continue
            self.skipped[reason] += 1
            bad = sum(self.skipped.values()) - self.skipped["blank_line"]
            if reason != "blank_line" and bad <= REPORT_FIRST:
                log.warning("%s:%d: skipped, %s: %r", self.path, number, REASONS[reason], raw[:80])
        self.finish()

    def _parse(self, raw: bytes, number: int) -> tuple[Pair | None, str | None]:
        if not raw.strip():
            return None, "blank_line"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, "invalid_utf8"
        columns = line.split("\t")
        if self.tatoeba and len(columns) not in (2, 3):
            return None, "wrong_columns"
        if len(columns) <= max(self.en_column, self.zh_column):
            return None, "too_few_columns"
        en, zh = columns[self.en_column].strip(), columns[self.zh_column].strip()
        if not en or not zh:
            return None, "empty_side"
        return Pair(zh, en, number), None

    def finish(self) -> None:
        """An NMTError when the file is empty, blank, mostly bad or has its columns swapped."""
        skipped, path = self.skipped, self.path
        blank = skipped.get("blank_line", 0)
        bad, content = sum(skipped.values()) - blank, self.lines_read - blank
        if self.lines_read == 0:
            raise NMTError(f"{path}: the corpus file is empty; fetch it again with `make data` "
                           f"(expected {FORMAT})")
        if bad:
            counts = ", ".join(f"{REASONS[r]}: {n}" for r, n in sorted(skipped.items()))
            log.warning("%s: skipped %d of %d lines (%s)", path, bad, content, counts)
        if content == 0:
            raise NMTError(f"{path}: only blank lines; fetch the corpus again with "
                           f"`make data` (expected {FORMAT})")
        if bad > MAX_BAD_FRACTION * content:
            counts = ", ".join(f"{n} with {REASONS[r]}" for r, n in sorted(skipped.items())
                               if r != "blank_line")
            raise NMTError(f"{path}: {bad} of {content} lines are unusable ({counts}); this "
                           f"does not look like the corpus. Expected {FORMAT}; fetch it again "
                           f"with `make data` or fix data.corpus")
        if self.swapped > MAX_BAD_FRACTION * self.good:
            raise NMTError(f"{path}: the Chinese column holds no Chinese on {self.swapped} of "
                           f"{self.good} lines; the columns look swapped (expected {FORMAT}, or "
                           f"name the columns: data.corpus={{tsv: PATH, zh_column: N, en_column: M}})")
