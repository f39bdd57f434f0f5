"""bench/soak_serve.py runs end to end on the trained smoke run: a server process, the models
that answer, two passes, a burst, a clean stop. It prints figures; the test checks that they are
there, not what they are."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import REPO

pytestmark = pytest.mark.e2e


def test_the_soak_prints_memory_per_pass_and_the_burst_statuses(trained_copy):
    done = subprocess.run(
        [sys.executable, "bench/soak_serve.py", *trained_copy.args(
            "--sentences", "12", "--clients", "2", "--burst", "4", "--burst-requests", "2")],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    # the trained checkpoint, reranked by its channel member's (both are best.pt)
    assert "model    PyTorch " in out and ": best.pt + best.pt rescoring" in out
    assert "loaded   RSS" in out and "pass 1   RSS" in out and "pass 2   RSS" in out
    assert "0 failed" in out and "burst    4 clients, 8 requests: 8 × 200" in out
    assert "stopped  exit status 0" in out
