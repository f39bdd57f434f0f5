"""The prepared-data folder as a cache that can be trusted: finished atomically, checked on use.

A folder is built in a temporary sibling (`.<hash>.partial-<host>-<pid>-XXXX`) and renamed into
place when complete, so an interrupted prepare never leaves a folder that looks finished. Its
manifest records every file it holds (whatever the build wrote, not a fixed list): line count,
size, modification time and SHA-256. Each later use checks them all, so a truncated copy, a full
disk or a stray edit is noticed before training reads two files of different lengths: the size
always, the content when the modification time is not the recorded one (a copied folder is
hashed once more; an untouched one of GBs is not read whole at every start).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MANIFEST = "manifest.json"
_UMASK = os.umask(0)
os.umask(_UMASK)


def record_files(folder: Path) -> dict[str, dict]:
    """{relative path: {"lines", "bytes", "sha256"}} for every file under `folder` but the
    manifest; what `check_files` compares against later."""
    return {name: _describe(path) for name, path in _files(folder).items()}


def check_files(folder: Path, recorded: dict[str, dict] | None) -> list[str]:
    """What differs from `recorded`, one message per file, each naming it; [] when all agree."""
    if not recorded:
        return [f"{folder / MANIFEST} records no file checksums (prepared by an older version)"]
    problems = []
    for name, expected in recorded.items():
        path = folder / name
        if not path.is_file():
            problems.append(f"{path} is missing")
            continue
        if path.stat().st_size != expected.get("bytes"):  # cheap, and the usual damage
            found = _describe(path)
            problems.append(f"{path} has {found['lines']} lines and {found['bytes']} bytes, but "
                            f"{expected.get('lines')} lines and {expected.get('bytes')} bytes "
                            f"were prepared (truncated or partly copied?)")
            continue
        if expected.get("mtime_ns") == path.stat().st_mtime_ns:
            continue  # untouched since it was recorded
        found = _describe(path)
        if {k: found[k] for k in ("lines", "bytes", "sha256")} != {
                k: expected.get(k) for k in ("lines", "bytes", "sha256")}:
            problems.append(f"{path} has the prepared size but not the prepared content "
                            f"(SHA-256 differs: edited or damaged?)")
    return problems


def _files(folder: Path) -> dict[str, Path]:
    return {path.relative_to(folder).as_posix(): path for path in sorted(folder.rglob("*"))
            if path.is_file() and path.name != MANIFEST}


def _describe(path: Path) -> dict:
    """Lines, bytes, modification time and SHA-256, read a block at a time."""
    digest, lines, size, last = hashlib.sha256(), 0, 0, b"\n"
    with open(path, "rb") as file:
        while block := file.read(1 << 20):
            digest.update(block)
            lines += block.count(b"\n")
            size += len(block)
            last = block[-1:]
    return {"lines": lines + (last != b"\n"), "bytes": size,
            "mtime_ns": path.stat().st_mtime_ns, "sha256": digest.hexdigest()}


@contextmanager
def building(final: Path) -> Iterator[Path]:
    """A fresh temporary folder beside `final`, renamed onto `final` when the block completes;
    removed instead if it raises. `final`, if it exists, is replaced as a whole."""
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(final)
    prefix = f".{final.name}.partial-{socket.gethostname()}-{os.getpid()}-"
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=prefix))
    try:
        yield tmp
        os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700 folders; give the usual mode
        _replace_folder(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _replace_folder(new: Path, final: Path) -> None:
    """A folder cannot be renamed onto a non-empty one: move the old one aside first. Between the
    two renames `final` is absent, which reads as "not prepared", never as finished."""
    old = None
    if final.exists():
        old = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}.old-"))
        os.replace(final, old / final.name)
    os.replace(new, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _remove_abandoned(final: Path) -> None:
    """Partial folders of prepares on this machine that were killed (their process is gone)."""
    host = socket.gethostname()
    for path in final.parent.glob(f".{final.name}.partial-{host}-*"):
        pid = path.name[len(f".{final.name}.partial-{host}-"):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)
    for path in final.parent.glob(f".{final.name}.old-*"):  # left between two renames
        shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
