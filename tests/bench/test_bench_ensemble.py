"""bench/bench_ensemble.py times ensembles of the trained run's own model (what its plan
translates with, used again as often as a count asks); random-init members only when asked, or
before any training, said so."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.e2e

SMALL = ["--members", "1,2", "--limit", "6", "--beam", "2", "--batch", "4"]
TIMED = re.compile(r"members +(1 \(plain\)|1|2): +[\d.]+ s, +[\d.]+ sentences/s, +\d+ tokens/s, "
                   r"[\d.]+x the plain model's time")


def timed(out: str) -> list[str]:
    return [found.group(1) for found in map(TIMED.match, out.splitlines()) if found]


def test_it_times_ensembles_of_the_trained_runs_model(trained, run_bench):
    status, out, err = run_bench("bench_ensemble.py", trained.args(*SMALL))
    assert status == 0, err
    assert f"members: trained, {trained.checkpoint}, each used again" in out
    assert "random init" not in out + err and "decoding 6 test sentences, beam 2, batch 4" in out
    assert timed(out) == ["1 (plain)", "1", "2"]


def test_random_members_are_asked_for_or_stand_in_before_any_training(trained, before_training,
                                                                     run_bench):
    status, out, err = run_bench("bench_ensemble.py", trained.args(*SMALL, "--random-init"))
    assert status == 0, err
    assert "members: random init, steered" in out and "no trained checkpoint" not in err
    assert timed(out) == ["1 (plain)", "1", "2"]

    status, out, err = run_bench("bench_ensemble.py", before_training.args(*SMALL))
    assert status == 0, err
    assert f"no trained checkpoint yet (nothing in {before_training.config.run_dir}" in err
    assert "members: random init, steered" in out and timed(out) == ["1 (plain)", "1", "2"]


def test_an_error_of_the_runs_plan_stops_the_bench(trained, run_bench, tmp_path):
    status, out, err = run_bench("bench_ensemble.py", trained.args(
        *SMALL, f"eval.rerank=[{tmp_path / 'gone.pt'}]", "eval.rerank_weights=[0.5]"))
    assert status == 2 and err.startswith("error: eval.rerank:")
    assert "random init" not in out and not timed(out)
