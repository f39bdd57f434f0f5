"""Writes that never leave a half-written file: write to a temporary file, then rename.

A write that fails (disk full, read-only folder, permission denied) is one NMTError naming the
path and the system's reason; the file under the final name is the previous one, untouched, and
the temporary file is removed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from nmt.errors import NMTError
from nmt.lines import decode_lines

_UMASK = os.umask(0)
os.umask(_UMASK)


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> None:
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
    """The lines of a UTF-8 text file, without line ends, split on "\\n" only (see nmt.lines).

    Not `read_text`: it would also split on a lone "\\r". Bytes that are not UTF-8 become U+FFFD,
    with a warning naming the file and the lines.
    """
    return decode_lines(Path(path).read_bytes(), str(path))
