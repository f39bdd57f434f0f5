"""model.target_order: a right_to_left model learns reversed targets, and everything that turns
its output into text (search results, attention rows, forced decoding, dev BLEU) reads left to
right again."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import as_family
from random_checkpoint import SRC_WORDS, TGT_WORDS, single_thread, write_random_checkpoint

from nmt.align.forced import forced_attention
from nmt.checkpoints.choose import load_ensemble
from nmt.config.schema import Config
from nmt.data.batching import Example, collate, in_model_order, in_target_order
from nmt.data.prepare import prepare
from nmt.data.vocab import PAD_ID, SPECIALS, Vocab
from nmt.decoding.hypothesis import Hypothesis, reversed_hypothesis
from nmt.decoding.search import greedy_search
from nmt.decoding.translate import translate_token_ids
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.model import build_model, target_order
from nmt.training.setup import load_training_data
from nmt.training.validate import DevSet, validate

PAIRS = [("汤姆喜欢猫。", "Tom likes cats ."), ("玛丽喜欢狗。", "Mary likes dogs ."),
         ("汤姆喜欢书。", "Tom likes books .")]


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def right_to_left(config: Config, **model) -> Config:
    return replace(config, model=as_family(config.model, target_order="right_to_left", **model))


def test_reversal_helpers():
    assert in_model_order([4, 5, 6], "right_to_left") == [6, 5, 4]
    assert in_model_order(in_model_order([4, 5, 6], "right_to_left"), "right_to_left") == [4, 5, 6]
    assert in_model_order([4, 5, 6], "left_to_right") == [4, 5, 6]
    examples = [Example([9, 8], [4, 5, 6]), Example([7], [4])]
    assert in_target_order(examples, "left_to_right") is examples
    assert in_target_order(examples, "right_to_left") == [Example([9, 8], [6, 5, 4]), Example([7], [4])]
    assert examples[0].tgt == [4, 5, 6]  # the input is left as it was


def test_a_reversed_hypothesis_keeps_the_eos_row_last():
    rows = np.arange(8, dtype=np.float32).reshape(4, 2)  # 3 tokens + </s>
    hyp = reversed_hypothesis(Hypothesis([4, 5, 6], -1.0, -2.0, True, rows))
    assert hyp.tokens == [6, 5, 4] and (hyp.score, hyp.log_prob, hyp.ended) == (-1.0, -2.0, True)
    assert hyp.attention.tolist() == [rows[2].tolist(), rows[1].tolist(), rows[0].tolist(), rows[3].tolist()]
    cut = reversed_hypothesis(Hypothesis([4, 5, 6], -1.0, -2.0, False, rows[:3]))  # no </s> row
    assert cut.attention.tolist() == rows[:3][::-1].tolist()
    assert reversed_hypothesis(Hypothesis([4], 0.0, 0.0)).attention is None


def test_training_and_dev_targets_of_a_right_to_left_model_are_reversed(smoke_config):
    prepared = prepare(smoke_config)
    forward = load_training_data(smoke_config, prepared)
    backward = load_training_data(right_to_left(smoke_config), prepared)
    for ours, theirs in ((forward.train_examples, backward.train_examples),
                         (forward.dev.examples, backward.dev.examples)):
        assert [ex.src for ex in theirs] == [ex.src for ex in ours]
        assert [ex.tgt[::-1] for ex in theirs] == [ex.tgt for ex in ours]
        assert any(ex.tgt != ex.tgt[::-1] for ex in ours)
    assert backward.dev.references == forward.dev.references  # BLEU still reads left to right


def _overfit_right_to_left(smoke: Config, architecture: str) -> tuple[Translator, list, list]:
    """A tiny right_to_left model that learned PAIRS by heart, its Translator, and the pairs' ids
    (targets in reading order)."""
    no_dropout = ({"attention_dropout": 0.0, "activation_dropout": 0.0}
                  if architecture == "transformer" else {})
    config = right_to_left(smoke, architecture=architecture, dropout=0.0, **no_dropout)
    src_vocab, tgt_vocab = Vocab(SPECIALS + SRC_WORDS), Vocab(SPECIALS + TGT_WORDS)
    torch.manual_seed(0)
    model = build_model(config.model, len(src_vocab), len(tgt_vocab))
    translator = Translator.from_model(model, config, (src_vocab, tgt_vocab), keep_attention=True)
    src_ids = [src_vocab.encode(translator.segment(zh)) for zh, _ in PAIRS]
    tgt_ids = [tgt_vocab.encode(en.split()) for _, en in PAIRS]
    examples = in_target_order([Example(s, t) for s, t in zip(src_ids, tgt_ids)], "right_to_left")
    batch = collate(examples, list(range(len(examples))))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(150):
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    return translator, src_ids, tgt_ids


@pytest.mark.parametrize("architecture", ["rnn", "transformer"])
def test_a_right_to_left_model_translates_left_to_right(smoke, architecture):
    translator, src_ids, tgt_ids = _overfit_right_to_left(smoke, architecture)
    model = translator.model.eval()
    assert target_order(model) == "right_to_left"
    # The search itself writes right to left ...
    src = torch.tensor([src_ids[0]])
    raw = greedy_search(model, src, torch.tensor([src.size(1)]))[0][0]
    assert raw.tokens == tgt_ids[0][::-1]
    # ... and everything that reads its output gets it left to right.
    assert [h.tokens for h in translate_token_ids(model, src_ids, replace(smoke.search, beam_size=1))] == tgt_ids
    translations = translator.translate([zh for zh, _ in PAIRS] + [""], beam_size=3)
    assert [t.text for t in translations] == ["Tom likes cats.", "Mary likes dogs.", "Tom likes books.", ""]
    first = translations[0]
    n = len(first.tokens)
    assert first.tokens == ["Tom", "likes", "cats", "."] and first.attention.shape == (n + 1, 4)
    # The attention rows were turned with the tokens; </s>'s row stays last.
    expected = np.concatenate([raw.attention[:n][::-1], raw.attention[n:]])
    np.testing.assert_allclose(first.attention, expected, atol=1e-5)
    # Forced decoding of the reference (alignment, gold heatmaps) reads it in the same order.
    forced = forced_attention(model, src_ids[:1], tgt_ids[:1])[0]
    np.testing.assert_allclose(forced, first.attention[:n], atol=1e-4)
    if architecture == "transformer":  # every head, teacher-forced again, in the same rows
        assert first.heads.shape == (2, n + 1, 4)
        np.testing.assert_allclose(first.heads.mean(0), first.attention, atol=1e-5)
        layers = translator.cross_attention(first)  # (layers, heads, T, S)
        np.testing.assert_allclose(layers[-1], first.heads, atol=1e-5)


def test_dev_bleu_of_a_right_to_left_model_reads_left_to_right(smoke):
    translator, src_ids, tgt_ids = _overfit_right_to_left(smoke, "rnn")
    examples = in_target_order([Example(s, t) for s, t in zip(src_ids, tgt_ids)], "right_to_left")
    dev = DevSet(examples, [translator.segment(zh) for zh, _ in PAIRS],
                 ["Tom likes cats.", "Mary likes dogs.", "Tom likes books."])
    result = validate(translator.model, dev, translator.tgt_vocab, translator.detokenizer, smoke.search,
                      batch_tokens=300, device=torch.device("cpu"))
    assert result.hypotheses == dev.references and result.bleu == pytest.approx(100.0)
    assert result.hypothesis_ids == tgt_ids and result.loss < 0.05


def test_an_ensemble_writes_in_one_order(tmp_path, smoke):
    forward = write_random_checkpoint(tmp_path / "l2r.pt", smoke)
    backward = write_random_checkpoint(tmp_path / "r2l.pt", right_to_left(smoke))
    with pytest.raises(NMTError, match=r"r2l\.pt writes model\.target_order = right_to_left"):
        load_ensemble([forward, backward])
    model = load_ensemble([backward, backward])[0]
    assert target_order(model) == "right_to_left"
