"""Checkpoint averaging: the exact mean of the weights, which checkpoints are kept and chosen."""

from __future__ import annotations

import json
import logging
import re
import runpy
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO
from nmt.checkpoints.averaging import average_checkpoints, average_weights, select_checkpoints
from nmt.checkpoints.file import (keep_step_checkpoint, load_checkpoint, model_from_checkpoint,
                            save_checkpoint, step_checkpoints)
from nmt.config.loader import build_config
from nmt.decoding.translate import decode_ids
from nmt.errors import NMTError
from nmt.decoding.plan import plan_for
from nmt.evaluation.evaluate import evaluate
from nmt.training.loop import train



@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def test_the_average_is_the_mean_of_the_weights_exactly():
    weights = [{"w": torch.tensor([[1.0, 2.0], [0.1, -4.0]]), "steps": torch.tensor([7])},
               {"w": torch.tensor([[3.0, 6.0], [0.2, 4.0]]), "steps": torch.tensor([7])},
               {"w": torch.tensor([[2.0, 1.0], [0.3, 3.0]]), "steps": torch.tensor([7])}]
    averaged = average_weights(weights, ["a", "b", "c"])
    exact = torch.tensor([[2.0, 3.0], [(0.1 + 0.2 + 0.3) / 3, 1.0]], dtype=torch.float64)
    assert averaged["w"].dtype == torch.float32
    assert torch.equal(averaged["w"], exact.float())  # the float32 nearest the exact mean
    assert torch.equal(averaged["steps"], torch.tensor([7]))  # non-float tensors: equal, kept
    with pytest.raises(NMTError, match="non-float"):
        average_weights(weights + [{"w": weights[0]["w"], "steps": torch.tensor([8])}], list("abcd"))
    with pytest.raises(NMTError, match="shapes"):
        average_weights([weights[0], {"w": torch.zeros(3), "steps": torch.tensor([7])}], ["a", "b"])


def test_averaged_checkpoint_has_the_mean_weights_and_translates(tmp_path, smoke):
    paths = []
    for seed in (1, 2, 3):
        path = write_random_checkpoint(tmp_path / f"step_{seed:06d}.pt", replace(smoke, seed=seed),
                                       step=10 * seed)
        paths.append(path)
    # The third kept a moving average: that is what it translates with, so what is averaged.
    third = load_checkpoint(paths[2])
    ema = {k: v + 1.0 for k, v in third["model"].items()}
    save_checkpoint(paths[2], {**third, "averaged_model": ema})

    averaged = average_checkpoints(paths)
    members = [load_checkpoint(p)["model"] for p in paths[:2]] + [ema]
    for name, tensor in averaged["model"].items():
        expected = (sum(m[name].double() for m in members) / 3).float()
        torch.testing.assert_close(tensor, expected, rtol=0, atol=0, msg=name)
    assert averaged["progress"]["step"] == 30 and averaged["config"] == third["config"]
    assert averaged["src_vocab"] == third["src_vocab"] and averaged["optimizer"] is None
    assert [entry["step"] for entry in averaged["averaged_from"]] == [10, 20, 30]
    output = tmp_path / "average.pt"
    save_checkpoint(output, averaged)
    model, _, src_vocab, _ = model_from_checkpoint(load_checkpoint(output))  # what translate loads
    assert torch.equal(model.output_layer.bias, averaged["model"]["output_layer.bias"])
    found = decode_ids(model, [src_vocab.encode(["汤姆", "喜欢", "猫"])], smoke.search)
    assert len(found) == 1 and found[0][0].tokens


def test_checkpoints_of_other_vocabularies_are_refused(tmp_path, smoke):
    a = write_random_checkpoint(tmp_path / "a.pt", smoke)
    b = write_random_checkpoint(tmp_path / "b.pt", smoke, tgt_words=["other", "words", "here"])
    with pytest.raises(NMTError, match="b.pt: its tgt_vocab differs"):
        average_checkpoints([a, b])


def _kept(folder: Path, scores: dict[int, float | None], keep: int = 10) -> None:
    for step, score in scores.items():
        keep_step_checkpoint(folder, {"config": {}, "src_vocab": [], "tgt_vocab": [], "model": {},
                                      "optimizer": {"big": 1}, "progress": {"step": step}},
                             keep, score)


def test_keeping_the_last_n_and_choosing_the_last_or_best(tmp_path):
    folder = tmp_path / "checkpoints"
    _kept(folder, {100: 5.0, 200: 9.0, 300: None, 400: 7.0, 500: 6.0}, keep=4)
    assert [step for step, _ in step_checkpoints(folder)] == [200, 300, 400, 500]
    kept = load_checkpoint(folder / "step_000200.pt")
    assert kept["dev_score"] == 9.0 and kept["optimizer"] is None and kept["rng"] == []
    names = [p.name for p in select_checkpoints(folder, "last", 2)]
    assert names == ["step_000400.pt", "step_000500.pt"]
    names = [p.name for p in select_checkpoints(folder, "best", 2)]
    assert names == ["step_000200.pt", "step_000400.pt"]  # 9.0 and 7.0, oldest first
    with pytest.raises(NMTError, match="3 kept checkpoints have a dev score, 4 asked for"):
        select_checkpoints(folder, "best", 4)
    with pytest.raises(NMTError, match="4 step checkpoints kept, 5 asked for.*keep_checkpoints=5"):
        select_checkpoints(folder, "last", 5)
    # eval.average after a short run: those there are (make eval goes on), but never none
    assert len(select_checkpoints(folder, "last", 5, allow_fewer=True)) == 4
    names = [p.name for p in select_checkpoints(folder, "best", 4, allow_fewer=True)]
    assert names == ["step_000200.pt", "step_000400.pt", "step_000500.pt"]
    unscored = tmp_path / "unscored"
    _kept(unscored, {100: None, 200: None})
    with pytest.raises(NMTError, match="0 kept checkpoints have a dev score, 2 asked for"):
        select_checkpoints(unscored, "best", 2, allow_fewer=True)
    with pytest.raises(NMTError, match="0 step checkpoints kept, 2 asked for"):
        select_checkpoints(tmp_path / "none", "last", 2, allow_fewer=True)


def test_eval_average_after_a_short_run_averages_the_checkpoints_there_are(smoke, caplog):
    """eval.average: best:5 with two scored step checkpoints: their average, with a warning,
    named for what was asked; scripts/average_checkpoints.py, asking by name, is refused."""
    folder = smoke.run_dir / "checkpoints"
    for step, score in ((10, 3.0), (20, None), (30, 4.0)):
        path = write_random_checkpoint(folder / f"step_{step:06d}.pt", replace(smoke, seed=step),
                                       step=step)
        save_checkpoint(path, {**load_checkpoint(path), "dev_score": score})
    config = replace(smoke, eval=replace(smoke.eval, average="best:5"))
    with caplog.at_level(logging.WARNING, logger="nmt.checkpoints.averaging"):
        assert plan_for(config).checkpoints == (folder / "average_best5.pt",)
    averaged = load_checkpoint(folder / "average_best5.pt")
    assert [entry["step"] for entry in averaged["averaged_from"]] == [10, 30]
    assert "2 kept checkpoints have a dev score, 5 asked for" in caplog.text
    assert "averaging the 2 there are" in caplog.text
    with pytest.raises(NMTError, match="2 kept checkpoints have a dev score, 5 asked for"):
        select_checkpoints(folder, "best", 5)


@pytest.mark.e2e
def test_training_keeps_step_checkpoints_and_the_script_averages_them(smoke_config, monkeypatch):
    config = replace(smoke_config, training=replace(
        smoke_config.training, max_steps=6, checkpoint_every=2, validate_every=2, keep_checkpoints=2))
    run_dir = train(config)
    kept = step_checkpoints(run_dir / "checkpoints")
    assert [step for step, _ in kept] == [4, 6]
    assert all(load_checkpoint(p)["dev_score"] is not None for _, p in kept)

    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the script sets it; undone after
    script = REPO / "scripts" / "average_checkpoints.py"  # run in this process: no second torch import
    monkeypatch.setattr(sys, "argv", [str(script), str(REPO / "configs" / "smoke.yaml"),
                                      f"runs_dir={config.runs_dir}", "--best", "2"])
    runpy.run_path(str(script), run_name="__main__")
    averaged = load_checkpoint(run_dir / "checkpoints" / "average_best2.pt")
    assert [entry["step"] for entry in averaged["averaged_from"]] == [4, 6]
    assert "average_checkpoints.py" in (run_dir / "commands.txt").read_text()

    # eval.average in the config (as the default's best:5) is what `make eval` scores.
    best_step = max((load_checkpoint(path)["dev_score"], step) for step, path in kept)[1]  # ties: newer
    results = evaluate(plan_for(replace(config, eval=replace(config.eval, average="best:1"))))
    assert [entry["step"] for entry in results["averaged_from"]] == [best_step]
    assert results["checkpoint"].endswith("average_best1.pt")
    assert json.loads((run_dir / "results.average_best1.json").read_text()) == results


@pytest.mark.parametrize("raw, message", [
    ({"eval": {"average": "last5"}}, "eval.average = 'last5' is not allowed; use last:N or best:N"),
    ({"eval": {"average": "best:0"}}, "eval.average = 'best:0' is not allowed"),
    ({"eval": {"average": "last:2", "ensemble": ["a.pt", "b.pt"]}}, "choose one"),
    ({"training": {"keep_checkpoints": -1}}, "training.keep_checkpoints = -1 is not allowed"),
    ({"training": {"keep_checkpoints": 2.5}}, "training.keep_checkpoints = 2.5 must be int"),
])
def test_bad_averaging_keys_are_named(raw, message):
    with pytest.raises(NMTError, match=re.escape(message)):
        build_config(raw, source="x.yaml")
    assert build_config({"eval": {"average": "best:12"}}).eval.average == "best:12"


def test_an_average_is_known_by_its_sources_content_and_an_older_one_is_written_again(tmp_path, smoke):
    """planned_average only reads: the same sources' contents, however their paths are spelled,
    make the average written; an average from before averages named their sources' SHA-256
    (their paths only) is written again, with the same weights; the bytes never depend on the
    spelling."""
    from nmt.checkpoints.averaging import planned_average, write_planned
    from nmt.checkpoints.file import save_checkpoint
    from nmt.io import file_sha256

    folder = smoke.run_dir / "checkpoints"
    for step in (10, 20):
        write_random_checkpoint(folder / f"step_{step:06d}.pt", replace(smoke, seed=step), step=step)
    planned = planned_average(smoke.run_dir, "last", 2)
    assert not planned.written and not planned.output.exists()  # only read
    write_planned(planned)
    written = file_sha256(planned.output)
    spelled = Path(str(smoke.run_dir).replace("/runs/", "/runs/./"))
    assert planned_average(spelled, "last", 2).written
    old = load_checkpoint(planned.output)  # as an older version wrote it: paths, no checksums
    old["averaged_from"] = [{"checkpoint": str(p), "step": s} for p, s in
                            zip(planned.sources, (10, 20))]
    save_checkpoint(planned.output, old)
    again = planned_average(smoke.run_dir, "last", 2)
    assert not again.written
    write_planned(again)
    assert file_sha256(planned.output) == written  # the same weights, the same bytes
