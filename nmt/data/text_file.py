"""Open a corpus file as it is on disk: plain, gzip or xz (recognised by its first bytes, not
its name), its lines as bytes, every byte read also fed to a SHA-256, so the prepare stage learns
the input's checksum without reading it twice. A zip archive or a binary file is refused with a
message that says what to do."""

from __future__ import annotations

import gzip
import hashlib
import io
import lzma
from collections.abc import Iterator
from pathlib import Path

from nmt.errors import NMTError


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
