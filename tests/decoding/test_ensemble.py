"""Ensemble decoding: one member is that model, identical members change nothing, the mean
probability is what it says, and members must share vocabularies."""

from __future__ import annotations

import json
import math
import re
import runpy
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO
from nmt.checkpoints.choose import load_ensemble, split_checkpoint_arguments
from nmt.checkpoints.file import load_checkpoint, model_from_checkpoint
from nmt.config.loader import build_config
from nmt.data.prepare import prepare
from nmt.data.vocab import BOS_ID
from nmt.decoding.translate import decode_ids
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.decoding.plan import plan_for
from nmt.evaluation.evaluate import evaluate
from nmt.model.ensemble import Ensemble

SOURCES = [[4, 5, 6, 7], [8, 9], [4, 12, 10, 11, 5, 6], [7]]  # ids of SRC_WORDS


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def _model(path: Path):
    return model_from_checkpoint(load_checkpoint(path))[0]


@pytest.fixture
def two_checkpoints(tmp_path, smoke) -> list[Path]:
    return [write_random_checkpoint(tmp_path / "a.pt", smoke),
            write_random_checkpoint(tmp_path / "b.pt", replace(smoke, seed=99))]


def _same(found, expected, exact: bool) -> None:
    for ours, theirs in zip(found, expected, strict=True):
        assert [h.tokens for h in ours] == [h.tokens for h in theirs]
        for h, g in zip(ours, theirs):
            if exact:
                assert h.score == g.score and h.log_prob == g.log_prob
            else:
                assert h.score == pytest.approx(g.score, abs=1e-5)
            if g.attention is not None:
                assert h.attention == pytest.approx(g.attention, abs=1e-6)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_an_ensemble_of_one_model_is_that_model(two_checkpoints, smoke, beam_size):
    model = _model(two_checkpoints[0])
    search = replace(smoke.search, beam_size=beam_size, n_best=min(2, beam_size))
    expected = decode_ids(model, SOURCES, search, keep_attention=True)
    _same(decode_ids(Ensemble([model]), SOURCES, search, keep_attention=True), expected, exact=True)


def test_two_identical_models_give_the_same_output(two_checkpoints, smoke):
    model = _model(two_checkpoints[0])
    search = replace(smoke.search, beam_size=3, n_best=2)
    expected = decode_ids(model, SOURCES, search, keep_attention=True)
    twins = Ensemble([model, _model(two_checkpoints[0])])
    _same(decode_ids(twins, SOURCES, search, keep_attention=True), expected, exact=False)


def test_a_step_averages_the_members_probabilities(two_checkpoints):
    a, b = (_model(p) for p in two_checkpoints)
    src, lengths = torch.tensor([SOURCES[0]]), torch.tensor([4])
    prev = torch.tensor([BOS_ID])
    with torch.inference_mode():
        expected_a, _, weights_a = a.decode_step(prev, a.init_state(memory := a.encode(src, lengths)), memory)
        expected_b, _, weights_b = b.decode_step(prev, b.init_state(memory := b.encode(src, lengths)), memory)
        ensemble = Ensemble([a, b])
        memory = ensemble.encode(src, lengths)
        log_probs, state, weights = ensemble.decode_step(prev, ensemble.init_state(memory), memory)
    mean = (expected_a.double().exp() + expected_b.double().exp()) / 2
    torch.testing.assert_close(log_probs.double(), mean.log(), rtol=0, atol=1e-6)
    assert math.isclose(log_probs.exp().sum().item(), 1.0, abs_tol=1e-5)
    torch.testing.assert_close(weights, (weights_a + weights_b) / 2)
    assert len(state.select(torch.tensor([0, 0])).parts[1].hidden) == 2  # beam search's copies


def test_teacher_forcing_averages_probabilities_attention_and_posteriors(two_checkpoints):
    """What forced alignment reads from an ensemble: the members' mean, as in search."""
    a, b = (_model(p) for p in two_checkpoints)
    src, lengths = torch.tensor([SOURCES[2], SOURCES[0] + [0, 0]]), torch.tensor([6, 4])
    tgt_in, tgt_out = torch.tensor([[BOS_ID, 4, 5, 6], [BOS_ID, 7, 4, 0]]), torch.tensor(
        [[4, 5, 6, 3], [7, 4, 3, 0]])
    ensemble = Ensemble([a, b]).eval()
    with torch.inference_mode():
        (logits_a, weights_a), (logits_b, weights_b) = a(src, lengths, tgt_in), b(src, lengths, tgt_in)
        log_probs, weights = ensemble(src, lengths, tgt_in)
        posterior = ensemble.posterior_attention(src, lengths, tgt_in, tgt_out)
        posteriors = [m.posterior_attention(src, lengths, tgt_in, tgt_out) for m in (a, b)]
    mean = (logits_a.double().softmax(-1) + logits_b.double().softmax(-1)) / 2  # (B, T, V)
    torch.testing.assert_close(log_probs.double(), mean.log(), rtol=0, atol=1e-6)
    torch.testing.assert_close(weights, (weights_a + weights_b) / 2)
    torch.testing.assert_close(posterior, (posteriors[0] + posteriors[1]) / 2)
    with pytest.raises(NMTError, match="--layer and --head pick a head of one model"):
        ensemble.attention_heads(src, lengths, tgt_in)


def test_members_must_share_vocabularies(tmp_path, smoke, two_checkpoints):
    other = write_random_checkpoint(tmp_path / "other.pt", smoke, tgt_words=["x", "y", "z", "w"])
    with pytest.raises(NMTError, match=r"other\.pt and .*a\.pt have different target vocabularies"):
        load_ensemble([two_checkpoints[0], other])
    lowercased = write_random_checkpoint(
        tmp_path / "lower.pt", replace(smoke, data=replace(smoke.data, lowercase=True)))
    with pytest.raises(NMTError, match=r"lower\.pt and .*a\.pt .*data\.lowercase"):
        load_ensemble([two_checkpoints[0], lowercased])


def test_checkpoint_arguments_repeat_or_take_commas():
    assert split_checkpoint_arguments(["a.pt,b.pt", "c.pt", " d.pt , "]) == ["a.pt", "b.pt", "c.pt", "d.pt"]
    assert split_checkpoint_arguments(None) == []


def test_translator_and_evaluate_with_an_ensemble(smoke_config, two_checkpoints):
    translator = Translator.from_checkpoints(two_checkpoints, search=smoke_config.search, device="cpu")
    assert isinstance(translator.model, Ensemble) and translator.checkpoints == two_checkpoints
    assert len(translator.translate(["汤姆喜欢猫。", ""])) == 2

    prepare(smoke_config)
    config = replace(smoke_config, eval=replace(smoke_config.eval, ensemble=[str(p) for p in two_checkpoints]))
    results = evaluate(plan_for(config))
    assert results["label"].startswith("ensemble-")  # eval.ensemble: named by its content
    assert results["checkpoints"] == [str(p) for p in two_checkpoints]
    label = results["label"]
    saved = json.loads((config.run_dir / f"results.{label}.json").read_text(encoding="utf-8"))
    assert saved == results and (config.run_dir / f"hypotheses.{label}.test.en").is_file()
    assert not (config.run_dir / "results.json").exists()  # the run's own results stay its own


def test_evaluate_script_takes_several_checkpoints_and_records_itself(smoke_config, two_checkpoints,
                                                                      monkeypatch, capsys):
    prepare(smoke_config)
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the script sets it; undone after
    script = REPO / "scripts" / "evaluate.py"  # in this process: no second torch import
    monkeypatch.setattr(sys, "argv", [
        str(script), str(REPO / "configs" / "smoke.yaml"), f"data.corpus={smoke_config.data.corpus}",
        f"data.prepared_dir={smoke_config.data.prepared_dir}", f"runs_dir={smoke_config.runs_dir}",
        "--checkpoint", f"{two_checkpoints[0]},{two_checkpoints[1]}", "--label", "twins"])
    runpy.run_path(str(script), run_name="__main__")
    run_dir = smoke_config.run_dir
    results = json.loads((run_dir / "results.twins.json").read_text(encoding="utf-8"))
    assert results["checkpoints"] == [str(p) for p in two_checkpoints]
    assert "+ 1 more (ensemble)" in capsys.readouterr().out
    assert (run_dir / "commands.txt").read_text().rstrip().endswith("--label twins")


@pytest.mark.parametrize("value, message", [
    ("a.pt", "eval.ensemble = 'a.pt' must be a list"),
    (["a.pt", 3], "eval.ensemble[1] = 3 must be str"),
])
def test_bad_ensemble_keys_are_named(value, message):
    with pytest.raises(NMTError, match=re.escape(message)):
        build_config({"eval": {"ensemble": value}}, source="x.yaml")
    assert build_config({"eval": {"ensemble": ["a.pt", "b.pt"]}}).eval.ensemble == ["a.pt", "b.pt"]
