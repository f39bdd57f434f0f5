"""Text lines as every reader of this project sees them: split on "\\n" and nothing else.

Python's own line splitting disagrees with itself: `str.splitlines()` also breaks at "\\r",
"\\x0b", "\\x0c", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, and a file opened in text mode
breaks at a lone "\\r". A file of N "\\n"-separated lines must give N translations whichever way it
arrives (a file, a pipe), so the readers here split bytes at b"\\n" only. A CRLF's "\\r" is
dropped; any other control or separator character stays inside its line (normalization later
turns it into a space). A last line without "\\n" is still a line; a UTF-8 byte-order mark at the
start of the input is not part of the text.

A line that is not valid UTF-8 is still a line: its bad bytes become U+FFFD, and one warning names
the input, the first few such lines and how many there were.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

log = logging.getLogger(__name__)

REPORT_FIRST = 5  # bad line numbers named in the warning; the rest are counted
_BOM = b"\xef\xbb\xbf"
_BLOCK = 1 << 20


class InvalidLines:
    """The numbers of the lines of one input that were not UTF-8, reported in one warning."""

    def __init__(self, name: str):
        self.name = name
        self.numbers: list[int] = []

    def decode(self, raw: bytes, number: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.numbers.append(number)
            return raw.decode("utf-8", errors="replace")

    def report(self) -> None:
        if not self.numbers:
            return
        count = len(self.numbers)
        shown = ", ".join(str(n) for n in self.numbers[:REPORT_FIRST])
        more = f" and {count - REPORT_FIRST} more" if count > REPORT_FIRST else ""
        log.warning("%s: %d line%s not valid UTF-8 (line%s %s%s); the bad bytes were replaced "
                    "by U+FFFD", self.name, count, " is" if count == 1 else "s are",
                    "" if count == 1 else "s", shown, more)


def _strip_end(raw: bytes) -> bytes:
    """The line without its "\\n" and the "\\r" of a CRLF."""
    if raw.endswith(b"\n"):
        raw = raw[:-1]
    return raw[:-1] if raw.endswith(b"\r") else raw


def iter_lines(raw_lines: Iterable[bytes], name: str) -> Iterator[str]:
    """Decoded lines from an iterable of b"\\n"-terminated byte lines: a binary file or
    `sys.stdin.buffer` (their iteration splits at b"\\n" only), read as it arrives."""
    invalid = InvalidLines(name)
    for number, raw in enumerate(raw_lines, start=1):
        if number == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM):]
        yield invalid.decode(_strip_end(raw), number)
    invalid.report()


def decode_lines(data: bytes, name: str) -> list[str]:
    """The lines of `data` (a whole file), as `iter_lines` would give them."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # the slow way, line by line, to name the bad ones
        return list(iter_lines(_split(data), name))
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final "\n" does not start another line
    if lines:  # a byte-order mark is not text, but a file holding only one is still a line
        lines[0] = lines[0].removeprefix("\ufeff")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _split(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def count_lines(path: str | Path) -> int:
    """How many lines `iter_lines` will give for the file at `path`, without decoding it."""
    count, last = 0, b"\n"
    with open(path, "rb") as file:
        while block := file.read(_BLOCK):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")
