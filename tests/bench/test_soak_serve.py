"""bench/soak_serve.py runs end to end on a tiny run: a server process, two passes, a burst, a
clean stop. It prints figures; the test checks that they are there, not what they are."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest

from helpers import REPO
from random_checkpoint import write_random_run
from nmt.data.prepare import prepare

pytestmark = pytest.mark.e2e


def test_the_soak_prints_memory_per_pass_and_the_burst_statuses(smoke_config):
    prepare(smoke_config)
    write_random_run(smoke_config.run_dir.parent, "smoke", replace(smoke_config, name="smoke"))
    done = subprocess.run(
        [sys.executable, "bench/soak_serve.py", str(REPO / "configs" / "smoke.yaml"),
         f"data.corpus={smoke_config.data.corpus}", f"data.prepared_dir={smoke_config.data.prepared_dir}",
         f"runs_dir={smoke_config.runs_dir}", "training.threads=1", "--sentences", "12",
         "--clients", "2", "--burst", "4", "--burst-requests", "2"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "loaded   RSS" in out and "pass 1   RSS" in out and "pass 2   RSS" in out
    assert "0 failed" in out and "burst    4 clients, 8 requests: 8 × 200" in out
    assert "stopped  exit status 0" in out
