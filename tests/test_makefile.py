"""The Makefile: `make help` lists every target with one line that says what it does."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from helpers import REPO


def phony_targets() -> list[str]:
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return re.search(r"^\.PHONY:(.*)$", text, re.M).group(1).split()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_help_lists_every_target_with_a_line():
    out = subprocess.run(["make", "-s", "help"], cwd=REPO, capture_output=True, text=True,
                         check=True).stdout
    listed = dict(re.findall(r"^  make (\S+)\s+(.+)$", out, re.M))
    assert sorted(listed) == sorted(phony_targets())
    assert all(len(line) > 10 for line in listed.values())
