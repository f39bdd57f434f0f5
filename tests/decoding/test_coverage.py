"""Attention used while searching: the coverage penalty, the word reward, when a search stops,
and noisy-channel reranking with a reverse model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from nmt.config.schema import SearchConfig
from nmt.data.vocab import BOS_ID, EOS_ID
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.rerank import Reranker, Rescorer
from nmt.decoding.search import Scoring, beam_search
from test_search import A, B, C, D, TableModel, beam_config, one_sentence


def test_the_coverage_penalty_is_gnmts_formula():
    coverage = torch.tensor([[0.5, 1.2, 0.3, 0.0], [1.0, 1.0, 2.0, 0.9]])  # (2, S) Σ_i a_ij
    real = torch.tensor([[True, True, True, False], [True, True, True, True]])  # the 4th: padding
    penalty = Scoring(coverage=0.5).coverage_penalty(coverage, real)
    assert penalty.tolist() == pytest.approx([0.5 * (math.log(0.5) + 0 + math.log(0.3)),
                                              0.5 * math.log(0.9)])
    never = Scoring(coverage=1.0).coverage_penalty(torch.zeros(1, 2), torch.ones(1, 2).bool())
    assert torch.isfinite(never).all() and never.item() < -20  # floored, not -inf


# Two first words, then two second words each. After A the model attends source position 0
# again; after B it attends position 1, the one A's paths never read. The A paths are likelier.
SKIPPER = {BOS_ID: {A: 0.6, B: 0.4}, A: {C: 0.5, D: 0.5}, B: {C: 0.5, D: 0.5}}
ATTEND = {BOS_ID: 0, A: 0, B: 1}


def test_coverage_decides_which_hypotheses_stay_in_the_beam():
    src, lengths = one_sentence(2)
    plain = beam_search(TableModel(SKIPPER, attend=ATTEND), src, lengths,
                        config=beam_config(beam_size=2, n_best=2))
    covered = beam_search(TableModel(SKIPPER, attend=ATTEND), src, lengths,
                          config=beam_config(beam_size=2, n_best=2, coverage_penalty=0.2))
    assert [h.tokens[0] for h in plain[0]] == [A, A]
    # Not only re-ranked at the end: the beam kept the two B paths, the A paths never finished.
    assert [h.tokens[0] for h in covered[0]] == [B, B]
    best = covered[0][0]
    assert best.score == pytest.approx(best.log_prob)  # its penalty is 0: both tokens covered


# Each word may end the sentence or go on, and each step makes it less likely.
CHAIN = {BOS_ID: {A: 1.0}, A: {EOS_ID: 0.6, B: 0.4}, B: {EOS_ID: 0.5, C: 0.5},
         C: {EOS_ID: 0.5, D: 0.5}, D: {EOS_ID: 1.0}}


def chain_model() -> TableModel:
    """CHAIN with every other continuation impossible, so no stray hypothesis fills the beam."""
    model = TableModel(CHAIN)
    model.log_probs[model.log_probs < -10] = float("-inf")
    return model


def test_the_word_reward_lengthens_outputs_monotonically():
    src, lengths = one_sentence(3)
    found = [len(beam_search(chain_model(), src, lengths, config=beam_config(
                 beam_size=4, word_reward=reward, stop="beam_full"))[0][0].tokens)
             for reward in (0.0, 0.3, 0.6, 0.75, 1.0, 2.0)]
    assert found == sorted(found) and found[0] == 1 and found[-1] == 4


def test_beam_full_finishes_the_longer_hypothesis_best_ended_gives_up():
    src, lengths = one_sentence(3)
    early = beam_search(chain_model(), src, lengths,
                        config=beam_config(beam_size=4, word_reward=1.0))[0][0]
    full = beam_search(chain_model(), src, lengths,
                       config=beam_config(beam_size=4, word_reward=1.0, stop="beam_full"))[0][0]
    assert early.tokens == [A]  # the step's best candidate ended: best_ended stopped there
    assert full.tokens == [A, B, C, D] and full.score > early.score


class Explainer(nn.Module):
    """A fake reverse model: it predicts a token well when the candidate it reads holds it."""

    def __init__(self, vocab: int = 8):
        super().__init__()
        self.vocab = vocab
        self.anchor = nn.Parameter(torch.zeros(1))  # a device to be on

    def forward(self, src, src_lengths, tgt_in):
        logits = torch.zeros(src.size(0), tgt_in.size(1), self.vocab)  # (B, T, V)
        for b in range(src.size(0)):
            for token in set(src[b, : src_lengths[b]].tolist()) | {EOS_ID}:
                logits[b, :, token] = 5.0
        return logits, None


def test_channel_reranking_picks_the_hypothesis_that_covers_the_source():
    source = [A, B]  # the Chinese x, as ids the reverse model writes
    drops = Hypothesis([A], score=-0.1, log_prob=-0.1)  # fluent, but says nothing of B
    covers = Hypothesis([A, B], score=-0.5, log_prob=-0.5)
    channel = Rescorer(Explainer(), 1.0, Path("reverse.pt"), "left_to_right", reverse=True)
    search = SearchConfig(beam_size=2)
    reranked = Reranker([channel]).rerank([source], [[drops, covers]], search)[0]
    assert [h.tokens for h in reranked] == [[A, B], [A]]
    unweighted = Rescorer(Explainer(), 0.0, Path("reverse.pt"), "left_to_right", reverse=True)
    assert Reranker([unweighted]).rerank([source], [[drops, covers]], search)[0][0] == drops


@pytest.mark.parametrize("family", ["rnn", "transformer", "ensemble"])
def test_coverage_reads_every_familys_attention(smoke, family):
    """The recurrent attention, the Transformer's alignment layer, an ensemble's mean: the
    penalty changes the scores, and a penalty of 0 changes nothing."""
    from nmt.model import build_model
    from nmt.model.ensemble import Ensemble

    from helpers import as_family

    torch.manual_seed(0)
    config = as_family(smoke.model, "transformer" if family == "transformer" else "rnn")
    members = [build_model(config, 12, 12).eval() for _ in range(2 if family == "ensemble" else 1)]
    model = Ensemble(members) if family == "ensemble" else members[0]
    src = torch.tensor([[4, 5, 6, 7, 8], [9, 10, 11, 0, 0]])  # (2, 5), the second padded
    lengths = torch.tensor([5, 3])
    plain = beam_search(model, src, lengths, config=beam_config(beam_size=3))
    off = beam_search(model, src, lengths,
                      config=beam_config(beam_size=3, coverage_penalty=0.0, stop="best_ended"))
    covered = beam_search(model, src, lengths,
                          config=beam_config(beam_size=3, coverage_penalty=1.0))
    assert [h.tokens for h in plain[0] + plain[1]] == [h.tokens for h in off[0] + off[1]]
    for hyps_plain, hyps_covered in zip(plain, covered):
        assert hyps_covered[0].score < hyps_covered[0].log_prob  # a random model covers badly
        assert math.isfinite(hyps_covered[0].score)
