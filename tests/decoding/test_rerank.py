"""n-best reranking (eval.rerank): the teacher-forced scorer is the model's own sequence score, a
weight of 0 changes nothing, a large weight picks what the rescoring model likes best, and bad
keys or checkpoints are named."""

from __future__ import annotations

import json
import os
import re
import runpy
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO, as_family
from nmt.checkpoints.file import load_checkpoint, model_from_checkpoint
from nmt.config.loader import build_config, load_config
from nmt.config.schema import Config
from nmt.data.prepare import prepare
from nmt.data.vocab import BOS_ID, EOS_ID
from nmt.decoding.hypothesis import length_penalty
from nmt.decoding.rerank import Reranker, candidate_log_probs
from nmt.decoding.translate import decode_ids
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.decoding.plan import plan_for
from nmt.decoding.resolve import rescoring_model
from nmt.evaluation.evaluate import evaluate
from nmt.io import read_lines

LINES = ["汤姆喜欢猫。", "玛丽喜欢狗。", "汤姆喜欢书。", "猫狗书。", "玛丽3", "书"]


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def right_to_left(config: Config) -> Config:
    return replace(config, seed=99, model=replace(config.model, target_order="right_to_left"))


@pytest.fixture
def main_checkpoint(smoke) -> Path:
    return write_random_checkpoint(smoke.run_dir / "checkpoints" / "best.pt", smoke)


@pytest.fixture
def r2l_checkpoint(tmp_path, smoke) -> Path:
    return write_random_checkpoint(tmp_path / "r2l.pt", right_to_left(smoke))


def _model(path: Path):
    return model_from_checkpoint(load_checkpoint(path))[0]


def step_by_step(model, src: list[int], tokens: list[int], ended: bool) -> float:
    """log p(tokens [</s>] | src), one decode_step at a time: what the search adds up."""
    with torch.inference_mode():
        memory = model.encode(torch.tensor([src]), torch.tensor([len(src)]))
        state, prev, total = model.init_state(memory), torch.tensor([BOS_ID]), 0.0
        for token in tokens + ([EOS_ID] if ended else []):
            log_probs, state, _ = model.decode_step(prev, state, memory)
            total += float(log_probs[0, token])
            prev = torch.tensor([token])
    return total


def _n_best(translator: Translator, search):
    """Source ids of LINES and the main model's whole beam for each."""
    src_ids = [translator.src_vocab.encode(translator.segment(line)) for line in LINES]
    return src_ids, decode_ids(translator.model, src_ids, replace(search, n_best=search.beam_size))


@pytest.mark.parametrize("architecture", ["rnn", "transformer"])
def test_the_scorer_is_the_sum_of_decode_step_log_probs(tmp_path, smoke, architecture):
    config = replace(smoke, model=as_family(smoke.model, architecture))
    model = _model(write_random_checkpoint(tmp_path / "m.pt", config))
    src = [[4, 5, 6, 7], [8, 9], [4, 12, 10, 11, 5, 6], [7], [5, 5]]
    tgt = [[4, 5, 6], [7], [8, 9, 10, 4, 4], [5, 6], []]
    ended = [True, False, True, False, True]
    found = candidate_log_probs(model.train(), src, tgt, ended, "cpu", batch_size=2)
    assert model.training  # its mode is given back; dropout was off while scoring
    expected = [step_by_step(model.eval(), s, t, e) for s, t, e in zip(src, tgt, ended)]
    assert found == pytest.approx(expected, abs=1e-4)


def test_weight_zero_changes_nothing(smoke, main_checkpoint, r2l_checkpoint):
    translator = Translator.from_checkpoint(main_checkpoint, search=smoke.search, device="cpu")
    src_ids, found = _n_best(translator, smoke.search)
    reranker = Reranker.load([rescoring_model(r2l_checkpoint, 0.0)], translator)
    reranked = reranker.rerank(src_ids, found, smoke.search)
    assert [[(h.tokens, h.score) for h in hyps] for hyps in reranked] == \
           [[(h.tokens, h.score) for h in hyps] for hyps in found]


def test_a_large_weight_picks_what_the_rescoring_model_scores_best(smoke, main_checkpoint,
                                                                   r2l_checkpoint, tmp_path):
    search, weight = smoke.search, 1e4
    translator = Translator.from_checkpoint(main_checkpoint, search=search, device="cpu")
    src_ids, found = _n_best(translator, search)
    reranker = Reranker.load([rescoring_model(r2l_checkpoint, weight)], translator)
    reranked = reranker.rerank(src_ids, found, search)
    rescorer = _model(r2l_checkpoint)
    changed = 0
    for src, candidates, ours in zip(src_ids, found, reranked):
        # Brute force: the right_to_left model reads each candidate reversed, step by step.
        rescored = [step_by_step(rescorer, src, h.tokens[::-1], h.ended)
                    / length_penalty(len(h.tokens) + h.ended, search.length_penalty) for h in candidates]
        best = max(range(len(candidates)), key=rescored.__getitem__)
        assert ours[0].tokens == candidates[best].tokens
        assert ours[0].score == pytest.approx(candidates[best].score + weight * rescored[best], rel=1e-5)
        assert sorted(h.score for h in ours) == [h.score for h in ours][::-1]
        changed += candidates[best].tokens != candidates[0].tokens
    assert changed  # the rescoring model disagreed with the search somewhere

    translator.reranker = reranker  # the Translator path: the same choice, as text
    texts = [t.text for t in translator.translate(LINES + [""])]
    expected = [translator.target_side().translation(translator.segment(line), [hyps[0]]).text
                for line, hyps in zip(LINES, reranked)]
    assert texts == expected + [""]
    assert reranker.seconds > 0

    # Two search workers rescore their own batches where they searched them: the same choice,
    # and the time they spent rescoring is counted here.
    translator.search = replace(search, batch_size=1, workers=2)
    spent, rerank, pids = reranker.seconds, reranker.rerank, tmp_path / "pids"

    def rerank_where(*args):
        with pids.open("a") as file:
            file.write(f"{os.getpid()}\n")
        return rerank(*args)

    reranker.rerank = rerank_where
    assert [t.text for t in translator.translate(LINES + [""])] == texts
    assert reranker.seconds > spent
    assert str(os.getpid()) not in pids.read_text().split() and len(pids.read_text().split()) == 6
    translator.search, reranker.rerank = search, rerank

    # make translate and serve: a config naming eval.rerank gives a Translator that reranks
    config = replace(smoke, eval=replace(smoke.eval, rerank=[str(r2l_checkpoint)],
                                         rerank_weights=[weight]))
    by_config = Translator.from_config(config, device="cpu")
    assert by_config.reranker.paths == [str(r2l_checkpoint)]
    assert [t.text for t in by_config.translate(LINES + [""])] == texts
    assert Translator.from_config(smoke, device="cpu").reranker is None


def test_evaluate_with_weight_zero_writes_the_same_hypotheses(smoke_config, main_checkpoint,
                                                              r2l_checkpoint):
    """With length_penalty 0 the search's best stays the best however many finished hypotheses
    it keeps (an n-best list searches on; with alpha > 0 a longer one may still overtake), and
    with one sentence a batch no other sentence changes its batch's arithmetic."""
    prepare(smoke_config)
    config = replace(smoke_config, search=replace(smoke_config.search, length_penalty=0.0,
                                                  batch_size=1))
    plain = evaluate(plan_for(config))
    config = replace(config, eval=replace(config.eval, rerank=[str(r2l_checkpoint)],
                                          rerank_weights=[0.0]))
    results = evaluate(plan_for(config))
    run_dir = config.run_dir
    assert read_lines(run_dir / "hypotheses.rerank.test.en") == read_lines(run_dir / "hypotheses.test.en")
    assert results["bleu"] == plain["bleu"] and results["label"] == "rerank"
    assert results["rerank"] == [str(r2l_checkpoint)] and results["rerank_weights"] == [0.0]
    assert results["rerank_seconds"] >= 0 and results["seconds"] > 0
    saved = json.loads((run_dir / "results.rerank.json").read_text(encoding="utf-8"))
    assert saved == results
    assert "rerank" not in json.loads((run_dir / "results.json").read_text(encoding="utf-8"))


def test_evaluate_script_takes_rerank_overrides(smoke_config, main_checkpoint, r2l_checkpoint,
                                                monkeypatch, capsys):
    prepare(smoke_config)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the script sets it; undone after
    script = REPO / "scripts" / "evaluate.py"  # in this process: no second torch import
    monkeypatch.setattr(sys, "argv", [
        str(script), str(REPO / "configs" / "smoke.yaml"), f"data.corpus={smoke_config.data.corpus}",
        f"data.prepared_dir={smoke_config.data.prepared_dir}", f"runs_dir={smoke_config.runs_dir}",
        f"eval.rerank=[{r2l_checkpoint}]", "eval.rerank_weights=[0.5]"])
    runpy.run_path(str(script), run_name="__main__")
    results = json.loads((smoke_config.run_dir / "results.rerank.json").read_text(encoding="utf-8"))
    assert results["rerank"] == [str(r2l_checkpoint)] and results["rerank_weights"] == [0.5]
    assert results["checkpoint"] == str(main_checkpoint)
    assert f"{r2l_checkpoint} × 0.5" in capsys.readouterr().out


def test_list_overrides_parse():
    config = load_config(REPO / "configs" / "smoke.yaml", [
        "eval.rerank=[runs/r2l/checkpoints/best.pt]", "eval.rerank_weights=[0.5]"])
    assert config.eval.rerank == ["runs/r2l/checkpoints/best.pt"] and config.eval.rerank_weights == [0.5]
    assert config.model.target_order == "left_to_right"


@pytest.mark.parametrize("keys, message", [
    ({"rerank": ["a.pt"]}, "eval.rerank_weights has 0 weight(s) but eval.rerank names 1 checkpoint(s)"),
    ({"rerank": ["a.pt"], "rerank_weights": [0.5, 1.0]}, "eval.rerank_weights has 2 weight(s)"),
    ({"rerank_weights": [0.5]}, "eval.rerank_weights has 1 weight(s) but eval.rerank names 0"),
    ({"rerank": ["a.pt"], "rerank_weights": [-0.5]}, "eval.rerank_weights = [-0.5] is not allowed"),
    ({"rerank": "a.pt", "rerank_weights": [0.5]}, "eval.rerank = 'a.pt' must be a list"),
])
def test_bad_rerank_keys_are_named(keys, message):
    with pytest.raises(NMTError, match=re.escape(message)):
        build_config({"eval": keys}, source="x.yaml")
    with pytest.raises(NMTError, match="model.target_order = 'up' is not allowed"):
        build_config({"model": {"target_order": "up"}}, source="x.yaml")


def test_bad_rescoring_checkpoints_are_named(tmp_path, smoke, smoke_config, main_checkpoint):
    translator = Translator.from_checkpoint(main_checkpoint, search=smoke.search, device="cpu")
    with pytest.raises(NMTError, match=r"eval\.rerank: .*nope\.pt: checkpoint not found"):
        Reranker.load([rescoring_model(tmp_path / "nope.pt", 1.0)], translator)
    other = write_random_checkpoint(tmp_path / "other.pt", smoke, tgt_words=["x", "y", "z", "w"])
    with pytest.raises(NMTError, match=r"eval\.rerank: .*other\.pt and .*best\.pt have different "
                                       r"target vocabularies"):
        Reranker.load([rescoring_model(other, 1.0)], translator)
    lowercased = write_random_checkpoint(
        tmp_path / "lower.pt", replace(smoke, data=replace(smoke.data, lowercase=True)))
    with pytest.raises(NMTError, match=r"eval\.rerank: .*lower\.pt .*data\.lowercase"):
        Reranker.load([rescoring_model(lowercased, 1.0)], translator)
    # evaluate names it before translating anything
    config = replace(smoke_config, eval=replace(smoke_config.eval, rerank=[str(tmp_path / "nope.pt")],
                                                rerank_weights=[1.0]))
    with pytest.raises(NMTError, match=r"eval\.rerank: .*nope\.pt: checkpoint not found"):
        evaluate(plan_for(config), prepared=object())
