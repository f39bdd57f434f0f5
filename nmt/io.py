"""Files in and out: lines read as this project reads them, and writes that never leave a
half-written file.

Reading. Text lines as every reader of this project sees them: split on "\\n" and nothing else.

Python's own line splitting disagrees with itself: `str.splitlines()` also breaks at "\\r",
"\\x0b", "\\x0c", "\\x1c"-"\\x1e", "\\x85", U+2028 and U+2029, and a file opened in text mode
breaks at a lone "\\r". A file of N "\\n"-separated lines must give N translations whichever way it
arrives (a file, a pipe), so the readers here split bytes at b"\\n" only. A CRLF's "\\r" is
dropped; any other control or separator character stays inside its line (normalization later
turns it into a space). A last line without "\\n" is still a line; a UTF-8 byte-order mark at the
start of the input is not part of the text.

A line that is not valid UTF-8 is still a line: its bad bytes become U+FFFD, and one warning names
the input, the first few such lines and how many there were.

Writing. Every write goes to a temporary file, then is renamed. A write that fails (disk full,
read-only folder, permission denied) is one NMTError naming the path and the system's reason;
the file under the final name is the previous one, untouched, and the temporary file is removed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Callable

from nmt.errors import NMTError

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


_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> None:
    """Call `write(tmp_path)`, then rename tmp_path onto `path` (atomic on POSIX).

    An OSError on the way becomes an NMTError that names `path`; other errors pass unchanged.
    Either way the temporary file is removed and `path` keeps what it held before.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        os.close(fd)
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600 files; give the usual mode
        os.replace(tmp, path)
    except BaseException as error:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise write_error(path, error) from None
        raise


def write_error(path: str | Path, error: OSError) -> NMTError:
    """"PATH: cannot write (No space left on device); the previous PATH is intact" and so on."""
    path = Path(path)
    reason = error.strerror or str(error) or type(error).__name__
    kept = (f"the previous {path.name} is intact" if path.is_file()
            else "nothing was written under that name")
    return NMTError(f"{path}: cannot write ({reason}); {kept}. Free some space or choose a "
                    f"folder you can write to, then run the same command again")


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def atomic_write_lines(path: str | Path, lines) -> None:
    atomic_write_text(path, "".join(f"{line}\n" for line in lines))


def atomic_write_json(path: str | Path, obj: Any) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 text file, without line ends, split on "\\n" only (see nmt.io).

    Not `read_text`: it would also split on a lone "\\r". Bytes that are not UTF-8 become U+FFFD,
    with a warning naming the file and the lines.
    """
    return decode_lines(Path(path).read_bytes(), str(path))


def short_hash(value: Any, length: int = 6) -> str:
    """The first `length` hex digits of the SHA-256 of `value` as sorted JSON: a name for it."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:length]


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file's bytes, read in blocks: what a results file records of its outputs,
    and what names a checkpoint in a decoding plan. Remembered for the same file, size and
    modification time, so a plan resolved again does not read its checkpoints again."""
    stat = os.stat(path)
    return _sha256_of(os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _sha256_of(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
