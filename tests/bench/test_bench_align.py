"""bench/bench_align.py times what make align aligns with: the trained run's forward model and its
channel (reverse) model from the run's decoding plan; the forward direction alone for a run
without a reverse model; random-init models only when asked, or before any training."""

from __future__ import annotations

import pytest

from nmt.align.agreement import BIDIRECTIONAL_METHODS, DEFAULT_BIDIRECTIONAL_METHOD

pytestmark = pytest.mark.e2e


@pytest.fixture
def pairs(tmp_path):
    source = tmp_path / "mine.tsv"
    source.write_text("汤姆喜欢猫。\tTom likes cats.\n\n玛丽喜欢狗。\tMary likes dogs.\n",
                      encoding="utf-8")
    return ["--input", str(source), "--pairs", "5"]


def line(out: str, prefix: str) -> str:
    [found] = [text for text in out.splitlines() if text.startswith(prefix)]
    return found


def test_it_times_the_trained_runs_two_directions_beside_eflomal(trained, pairs, run_bench):
    status, out, err = run_bench("bench_align.py", trained.args(*pairs))
    assert status == 0, err
    assert line(out, "models   ").startswith(
        f"models   trained: forward {trained.checkpoint} (step 6), reverse {trained.channel} (step 6);")
    assert "random init" not in out + err
    assert "corpus   5 pairs of" in out and "float32" in line(out, "machine  ")
    assert "pairs/s" in line(out, "forward alone    (attention)")
    assert "pairs/s" in line(out, "forward alone    (posterior)")  # a recurrent model's
    assert "pairs/s" in line(out, "both directions  (posterior / posterior)")
    combined = [text for text in out.splitlines() if text.startswith("  + ")]
    assert [text.split(":")[0].split()[1] for text in combined] == list(BIDIRECTIONAL_METHODS)
    assert line(out, f"  + {DEFAULT_BIDIRECTIONAL_METHOD:<20}").endswith("(default)")
    assert line(out, "eflomal")  # its speed, or that it is not installed


def test_a_run_without_a_reverse_model_has_its_forward_direction_timed_alone(trained, pairs,
                                                                            run_bench):
    # eval.channel_weight 0: the plan rescores with no channel model, so it has none to align with
    status, out, err = run_bench("bench_align.py", trained.args("eval.channel_weight=0", *pairs,
                                                                "--no-eflomal"))
    assert status == 0, err
    assert f"forward {trained.checkpoint} (step 6); no reverse model" in line(out, "models   ")
    assert "pairs/s" in line(out, "forward alone    (posterior)")
    assert "not measured: the run smoke has no reverse model" in line(out, "both directions  ")
    # --reverse names one: both directions again
    status, out, err = run_bench("bench_align.py", trained.args(
        "eval.channel_weight=0", *pairs, "--no-eflomal", "--reverse", str(trained.channel)))
    assert status == 0, err
    assert f"reverse {trained.channel}" in line(out, "models   ")
    assert "pairs/s" in line(out, "both directions  (posterior / posterior)")


def test_random_init_is_asked_for_or_stands_in_before_any_training(trained, before_training, pairs,
                                                                  run_bench):
    status, out, err = run_bench("bench_align.py", trained.args(*pairs, "--no-eflomal",
                                                                "--random-init"))
    assert status == 0, err
    assert "no trained checkpoint" not in err
    assert line(out, "models   ").startswith("models   forward and reverse, random init;")
    assert "pairs/s" in line(out, "both directions  (posterior / posterior)")

    status, out, err = run_bench("bench_align.py", before_training.args(*pairs, "--no-eflomal"))
    assert status == 0, err
    assert f"no trained checkpoint yet (nothing in {before_training.config.run_dir}" in err
    assert line(out, "models   ").startswith("models   forward and reverse, random init;")


def test_a_reverse_model_that_is_not_one_stops_the_bench(trained, pairs, run_bench):
    status, out, err = run_bench("bench_align.py", trained.args(
        *pairs, "--no-eflomal", "--reverse", str(trained.checkpoint)))  # a forward model
    assert status == 2 and "is a model.direction = forward model" in err
    assert "random init" not in out + err and "pairs/s" not in out
