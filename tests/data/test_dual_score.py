"""Dual conditional cross-entropy: the score of each pair by a run's two directions, the script
that writes it, and the second prepare that drops the worst share of it, saying when the scores
are not of the corpus it cleans."""

from __future__ import annotations

import json
import logging
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
    worst = read_dual_scores(str(path), 0.1).worst
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


def scores_file(path, lines) -> str:
    """A dual_scores.tsv as scripts/dual_score.py writes it, scoring `lines` (worse and worse)."""
    rows = [f"{line}\t1.0\t1.0\t{k / 10:.4f}" for k, line in enumerate(lines)]
    path.write_text("\n".join(["line\th_forward\th_reverse\tscore", *rows]) + "\n", encoding="utf-8")
    return str(path)


def with_dual(config, path: str, drop: float = 0.1):
    return replace(config, data=replace(config.data, clean=replace(
        config.data.clean, dual_scores=path, dual_drop=drop)))


def test_scores_meet_the_corpus_by_line_number_and_count_what_they_met(tmp_path):
    dual = read_dual_scores(scores_file(tmp_path / "d.tsv", ["1", "2", "3", "2:1"]), 0.5)
    assert dual.worst == {"3", "2:1"} and len(dual.scored) == 4
    for line in ["1", "3", "4", "1:1", "2:1"]:  # "4" and "1:1" are not scored
        dual.see(line)
    assert dual.met == 3
    dual.check("a.txt")  # some met: a warning, no error
    with pytest.raises(NMTError, match="none of the 4 lines scored in .*d.tsv is a line of the "
                                       "corpus a.txt .*scripts/dual_score.py"):
        read_dual_scores(scores_file(tmp_path / "d.tsv", ["1", "2", "3", "2:1"]), 0.5).check("a.txt")


def test_scores_of_another_corpus_are_an_error_that_says_how_to_score_this_one(smoke_config, tmp_path):
    # another corpus's training lines: numbers past the 200 lines of the tiny one
    path = scores_file(tmp_path / "other.tsv", [str(n) for n in range(1001, 1041)])
    with pytest.raises(NMTError) as error:
        prepare(with_dual(smoke_config, path))
    message = str(error.value)
    assert "data.clean.dual_scores: none of the 40 lines scored in" in message and path in message
    assert str(smoke_config.data.corpus.files()[0]) in message  # the corpus it cleaned
    assert "training.channel_members: 1" in message and "scripts/dual_score.py" in message
    assert not list((tmp_path / "prepared").glob("*/manifest.json"))  # nothing prepared


def test_scores_that_meet_only_some_lines_are_a_warning_with_the_count(smoke_config, tmp_path, caplog):
    lines = [str(n) for n in range(1, 101)] + ["201", "202", "7:3"]  # the corpus has 200 lines
    path = scores_file(tmp_path / "mostly.tsv", lines)
    with caplog.at_level(logging.WARNING, logger="nmt.data.filters"):
        counts = json.loads(prepare(with_dual(smoke_config, path, 0.05)).manifest_path.read_text(
            encoding="utf-8"))["counts"]
    warned = [r.getMessage() for r in caplog.records if "dual_scores" in r.getMessage()]
    assert len(warned) == 1 and f"3 of the 103 lines scored in {path} are not lines" in warned[0]
    # the worst 5 by score are the last 5 scored: corpus lines 99 and 100, and the 3 it lacks
    assert counts["clean"]["dropped"]["dual"] == 2


def test_scores_that_meet_every_line_say_nothing(smoke_config, tmp_path, caplog):
    path = scores_file(tmp_path / "all.tsv", [str(n) for n in range(1, 201)])
    with caplog.at_level(logging.WARNING, logger="nmt.data.filters"):
        prepare(with_dual(smoke_config, path, 0.02))
    assert not [r for r in caplog.records if "dual_scores" in r.getMessage()]
