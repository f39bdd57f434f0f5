"""bench/bench_decode.py measures what make eval decodes (the trained run's plan, its channel
model's rescoring included); a random stand-in only for a run with no checkpoint at all, said
so; any other error of the plan stops it with the error's message."""

from __future__ import annotations

import pytest

from helpers import REPO
from nmt.config.tuned import tuned_path

pytestmark = pytest.mark.e2e

SMALL = ["--limit", "6", "--beam", "2", "--batch", "4"]
FIGURES = ("machine     ", "decoding    6 test sentences, beam 2, batch 4", "search      ",
           "end to end  ", "vs Joey NMT ")


def lines_starting(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


def test_it_measures_the_trained_runs_plan_with_its_rescoring(trained, run_bench):
    status, out, err = run_bench("bench_decode.py", trained.args(*SMALL))
    assert status == 0, err
    [model] = lines_starting(out, "model       ")
    assert model.startswith(f"model       {trained.checkpoint} rescored by {trained.channel}: ")
    assert "parameters" in model and "random init" not in out + err
    for prefix in FIGURES:
        assert len(lines_starting(out, prefix)) == 1, (prefix, out)


def test_a_run_with_no_checkpoint_is_measured_by_a_stand_in_that_says_so(before_training, run_bench):
    status, out, err = run_bench("bench_decode.py", before_training.args(*SMALL))
    assert status == 0, err
    assert f"no trained checkpoint yet (nothing in {before_training.config.run_dir}" in err
    [model] = lines_starting(out, "model       ")
    assert model.startswith("model       random init, </s> steered to ~1.15x the source length")
    for prefix in FIGURES:
        assert len(lines_starting(out, prefix)) == 1, (prefix, out)


def test_each_config_of_also_is_its_own_runs_or_a_stand_in(trained, run_bench):
    # the Transformer experiment has no run here: it alone is measured by a stand-in
    status, out, err = run_bench("bench_decode.py", trained.args(
        *SMALL, "--also", str(REPO / "configs" / "smoke_transformer.yaml")))
    assert status == 0, err
    models = lines_starting(out, "model       ")
    assert len(models) == 2 and str(trained.checkpoint) in models[0]
    assert "random init" in models[1] and err.count("no trained checkpoint yet") == 1


def test_a_missing_rescoring_model_stops_the_bench_with_its_error(trained, run_bench, tmp_path):
    missing = tmp_path / "gone.pt"
    status, out, err = run_bench("bench_decode.py", trained.args(
        *SMALL, f"eval.rerank=[{missing}]", "eval.rerank_weights=[0.5]"))
    assert status == 2 and err.startswith("error: eval.rerank:") and str(missing) in err
    assert "random init" not in out + err and "no trained checkpoint" not in err
    assert not lines_starting(out, "search      ")


def test_a_damaged_tuned_file_stops_the_bench_with_its_error(trained_copy, run_bench):
    path = tuned_path(trained_copy.config)
    path.write_text("search: [beam_size\n", encoding="utf-8")
    status, out, err = run_bench("bench_decode.py", trained_copy.args(*SMALL))
    assert status == 2 and f"error: {path}" in err
    assert "random init" not in out + err and "no trained checkpoint" not in err
