"""bench/bench_train.py measures a config as `make train` runs it: members side by side."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers import REPO
from nmt.data.prepare import prepare


def run_bench(config, *overrides: str) -> str:
    command = [sys.executable, str(REPO / "bench" / "bench_train.py"), str(REPO / "configs" / "smoke.yaml"),
               f"data.corpus={config.data.corpus}", f"data.prepared_dir={config.data.prepared_dir}",
               "training.threads=1", "training.batch_tokens=50", *overrides, "--steps", "2"]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True,
                          timeout=300).stdout


@pytest.mark.e2e
def test_two_members_are_timed_together_and_their_tokens_summed(smoke_config):
    prepare(smoke_config)
    single = run_bench(smoke_config, "training.members=1")
    assert "members side by side" not in single and "training: 2 steps" in single

    both = run_bench(smoke_config, "training.members=2")
    rates = re.search(r"2 members side by side, 1 thread\(s\) each: (\d+) \+ (\d+) target", both)
    assert rates, both
    assert "training: 4 steps" in both  # two steps each
    total = re.search(r"= (\d+) target tokens/s", both)
    # The sum over the slowest member's seconds: at most the members' own rates added up.
    assert 0 < int(total.group(1)) <= int(rates.group(1)) + int(rates.group(2)) + 1

    with pytest.raises(subprocess.CalledProcessError) as too_few:  # 200 pairs: a few batches
        run_bench(smoke_config, "training.members=1", "training.batch_tokens=100000")
    assert "batches of training.batch_tokens=100000" in too_few.value.stderr


@pytest.mark.e2e
def test_a_member_that_fails_stops_the_bench_instead_of_leaving_it_waiting(smoke_config):
    # No prepared data: each member fails before the barrier the others wait at.
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_bench(smoke_config, "training.members=2")
    assert "a member's measurement failed" in failed.value.stderr
    assert "is not prepared" in failed.value.stderr
