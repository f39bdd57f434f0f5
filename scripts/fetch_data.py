"""Fetch the Tatoeba cmn-eng corpus into data/raw/cmn-eng/cmn.txt (`make data`).

    python scripts/fetch_data.py [--mirror DIR] [--dest data/raw]

Takes <mirror>/cmn-eng/cmn.txt (and its README.md) when the mirror folder has it; otherwise
downloads the public export from manythings.org and extracts cmn.txt. Checks the format either
way. Does nothing when the destination already holds a corpus in the right format.
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import shutil
import urllib.request
import zipfile
from pathlib import Path

from nmt.cli import run_cli
from nmt.errors import NMTError
from nmt.io import atomic_write

log = logging.getLogger("fetch_data")

URL = "https://www.manythings.org/anki/cmn-eng.zip"
# manythings.org refuses urllib's default User-Agent with 403 Forbidden.
USER_AGENT = "Mozilla/5.0 (compatible; nmt-fetch-data/0.1)"
NAME = "cmn-eng"
MIN_GOOD_FRACTION = 0.9  # lines with >= 2 tab-separated columns
WHAT_TO_DO = (
    "To get the corpus: download https://www.manythings.org/anki/cmn-eng.zip in a browser, "
    "extract cmn.txt to data/raw/cmn-eng/cmn.txt, and run `make data` again; or point "
    "DATA_MIRROR=DIR at a folder holding cmn-eng/cmn.txt (`make data DATA_MIRROR=DIR`)"
)


def check_format(data: bytes) -> str | None:
    """None if `data` looks like the corpus TSV, else what is wrong with it."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        return f"not UTF-8 text ({error.reason} at byte {error.start})"
    lines = [line for line in text.split("\n") if line.strip()]  # not splitlines(): see nmt/io.py
    if not lines:
        return "empty"
    good = sum(1 for line in lines if len(line.split("\t")) >= 2)
    if good < MIN_GOOD_FRACTION * len(lines):
        return f"only {good} of {len(lines)} lines are tab-separated 'English<TAB>Chinese' pairs"
    return None


def fetch(mirror: Path, dest: Path, url: str = URL) -> Path:
    target = dest / NAME / "cmn.txt"
    if target.is_file():
        problem = check_format(target.read_bytes())
        if problem is None:
            log.info("%s is already there", target)
            return target
        log.warning("%s is there but %s; fetching it again", target, problem)
    source = mirror / NAME / "cmn.txt"
    if source.is_file():
        _from_mirror(source, target)
    else:
        log.info("no %s; downloading %s", source, url)
        _download(url, target)
    log.info("corpus ready: %s (%d lines)", target, target.read_bytes().count(b"\n"))
    return target


def _from_mirror(source: Path, target: Path) -> None:
    problem = check_format(source.read_bytes())
    if problem:
        raise NMTError(f"{source}: not the cmn-eng corpus: {problem}. {WHAT_TO_DO}")
    for name in ("cmn.txt", "README.md"):
        if (source.parent / name).is_file():
            atomic_write(target.parent / name,
                         lambda tmp, name=name: shutil.copyfile(source.parent / name, tmp))
    log.info("copied %s", source)


def _download(url: str, target: Path) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            archive = zipfile.ZipFile(io.BytesIO(response.read()))
        data = archive.read("cmn.txt")
    except OSError as error:  # URLError, HTTPError and timeouts are all OSErrors
        raise NMTError(f"could not download {url}: {error}. {WHAT_TO_DO}") from None
    except (zipfile.BadZipFile, KeyError) as error:
        raise NMTError(f"{url} is not a zip holding cmn.txt ({error}). {WHAT_TO_DO}") from None
    problem = check_format(data)
    if problem:
        raise NMTError(f"cmn.txt in {url}: {problem}. {WHAT_TO_DO}")
    atomic_write(target, lambda tmp: tmp.write_bytes(data))


def main(args: argparse.Namespace) -> None:
    print(fetch(Path(args.mirror), Path(args.dest), args.url))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mirror", default=os.environ.get("DATA_MIRROR", "../shared/data"),
                        help="folder holding cmn-eng/cmn.txt (default: $DATA_MIRROR or "
                             "../shared/data)")
    parser.add_argument("--dest", default="data/raw", help="where cmn-eng/cmn.txt goes")
    parser.add_argument("--url", default=URL, help=argparse.SUPPRESS)  # tests use a file:// URL
    run_cli(main, parser)
