"""Dual conditional cross-entropy: the score of each pair by a run's two directions, the script
that writes it, and the second prepare that drops the worst share of it."""

from __future__ import annotations

import json
import runpy
import sys
from dataclasses import replace

import numpy as np
import pytest
from random_checkpoint import single_thread, write_random_members

from helpers import REPO
from nmt.config.loader import load_config
from nmt.data.filters import read_dual_scores
from nmt.data.prepare import prepare
from nmt.decoding.dual_score import dual_scores
from nmt.decoding.rerank import candidate_log_probs
from nmt.errors import NMTError


@pytest.fixture
def run(tmp_path, tiny_corpus):
    """A run with a translating member and a channel member, random weights over the prepared
    vocabularies, config.yaml beside them."""
    config = load_config(REPO / "configs" / "smoke.yaml", [
        f"data.corpus={tiny_corpus}", f"data.prepared_dir={tmp_path / 'prepared'}",
        f"runs_dir={tmp_path / 'runs'}", "training.channel_members=1", "eval.channel_weight=0.5",
        "training.device=cpu"])
    prepared = prepare(config)
    write_random_members(config)
    return config, prepared


def test_the_score_reads_each_pair_both_ways_per_token(run):
    from nmt.checkpoints.choose import load_chosen

    config, _ = run
    forward = load_chosen([config.run_dir / "checkpoints" / "best.pt"], "cpu").model
    reverse = load_chosen([config.run_dir / "member2" / "checkpoints" / "best.pt"], "cpu").model
    src, tgt = [[4, 5, 6], [7, 8]], [[4, 5], [6, 7, 8, 9]]
    with single_thread():
        scores = dual_scores(forward, reverse, "left_to_right", src, tgt, "cpu")  # (2, 3)
        h_forward = -np.array(candidate_log_probs(forward, src, tgt, [True, True], "cpu")) / [3, 5]
        h_reverse = -np.array(candidate_log_probs(reverse, tgt, src, [True, True], "cpu")) / [4, 3]
    np.testing.assert_allclose(scores[:, 0], h_forward, rtol=1e-5)
    np.testing.assert_allclose(scores[:, 1], h_reverse, rtol=1e-5)
    np.testing.assert_allclose(scores[:, 2], abs(h_forward - h_reverse) + (h_forward + h_reverse) / 2,
                               rtol=1e-5)


def test_the_script_scores_every_training_pair_and_prepare_drops_the_worst(run, monkeypatch, capsys):
    config, prepared = run
    script = REPO / "scripts" / "dual_score.py"
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the script sets it; undone after
    monkeypatch.setattr(sys, "argv", [
        str(script), str(REPO / "configs" / "smoke.yaml"), f"data.corpus={config.data.corpus}",
        f"data.prepared_dir={config.data.prepared_dir}", f"runs_dir={config.runs_dir}",
        "training.channel_members=1", "eval.channel_weight=0.5", "training.device=cpu"])
    with single_thread():
        runpy.run_path(str(script), run_name="__main__")
    path = config.run_dir / "dual_scores.tsv"
    rows = path.read_text(encoding="utf-8").splitlines()
    train_pairs = len(prepared.source_lines("train").read_text().splitlines())
    assert rows[0] == "line\th_forward\th_reverse\tscore" and len(rows) == 1 + train_pairs
    worst = read_dual_scores(str(path), 0.1)
    assert len(worst) == round(0.1 * train_pairs)
    assert max(float(r.split("\t")[3]) for r in rows[1:] if r.split("\t")[0] not in worst) <= \
        min(float(r.split("\t")[3]) for r in rows[1:] if r.split("\t")[0] in worst)
    # the second prepare drops those lines, and counts them
    second = replace(config, data=replace(config.data, clean=replace(
        config.data.clean, dual_scores=str(path), dual_drop=0.1)))
    counts = json.loads(prepare(second).manifest_path.read_text(encoding="utf-8"))["counts"]
    assert counts["clean"]["dropped"] == {"dual": len(worst)}


def test_dual_scores_and_dual_drop_go_together(run, tmp_path):
    config, _ = run
    half = replace(config, data=replace(config.data, clean=replace(config.data.clean, dual_drop=0.1)))
    with pytest.raises(NMTError, match="dual_scores and data.clean.dual_drop go together"):
        prepare(half)
    (tmp_path / "bad.tsv").write_text("line\th_forward\th_reverse\tscore\n1\tx\n", encoding="utf-8")
    with pytest.raises(NMTError, match="bad.tsv is not a file of dual scores"):
        read_dual_scores(str(tmp_path / "bad.tsv"), 0.1)
