"""bench/bench_train.py measures a config as `make train` runs it, on its prepared data: the
trained smoke run's recipe (a model and its channel member side by side), members summed."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from helpers import REPO

pytestmark = pytest.mark.e2e


SMALL = ["training.threads=1", "training.batch_tokens=50", "--steps", "2"]


def run_bench(arguments: list[str]) -> str:
    command = [sys.executable, str(REPO / "bench" / "bench_train.py"), *arguments]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True,
                          timeout=300).stdout


def test_the_trained_runs_recipe_is_timed_member_and_channel_member_together(trained):
    both = run_bench(trained.args(*SMALL))  # training.members=1, training.channel_members=1
    rates = re.search(r"2 members side by side, 1 thread\(s\) each: (\d+) \+ (\d+) target", both)
    assert rates, both
    assert "training: 4 steps" in both  # two steps each
    total = re.search(r"= (\d+) target tokens/s", both)
    # The sum over the slowest member's seconds: at most the members' own rates added up.
    assert 0 < int(total.group(1)) <= int(rates.group(1)) + int(rates.group(2)) + 1
    assert re.search(r"model: [\d.]+ MFLOP per target token", both)
    assert re.search(r"utilisation: [\d.]+ GFLOP/s achieved", both)


def test_one_model_is_timed_alone_and_too_few_batches_say_so(trained):
    single = run_bench(trained.args(*SMALL, "training.channel_members=0"))
    assert "members side by side" not in single and "training: 2 steps" in single
    assert re.search(r"matmul: [\d.]+ GFLOP/s \(float32", single)

    with pytest.raises(subprocess.CalledProcessError) as too_few:  # 200 pairs: a few batches
        run_bench(trained.args(*SMALL, "training.channel_members=0",
                               "training.batch_tokens=100000"))
    assert "batches of training.batch_tokens=100000" in too_few.value.stderr


def test_a_member_that_fails_stops_the_bench_instead_of_leaving_it_waiting(smoke_config):
    # No prepared data: each member fails before the barrier the others wait at.
    with pytest.raises(subprocess.CalledProcessError) as failed:
        run_bench([str(REPO / "configs" / "smoke.yaml"), f"data.corpus={smoke_config.data.corpus}",
                   f"data.prepared_dir={smoke_config.data.prepared_dir}", *SMALL,
                   "training.members=2"])
    assert "a member's measurement failed" in failed.value.stderr
    assert "is not prepared" in failed.value.stderr
