"""Greedy and beam search: beam 1 is greedy, known best sequences, length penalty, EOS handling."""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch

from nmt.config.schema import ModelConfig, RNNConfig, SearchConfig
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmt.decoding.hypothesis import length_penalty
from nmt.decoding.search import beam_search, greedy_search, replace_unknowns, search
from nmt.errors import NMTError
from nmt.model import build_model
from nmt.model.decoder import DecoderState, Memory
from random_checkpoint import GrowingEos

A, B, C, D = 4, 5, 6, 7  # the fake model's ordinary tokens


class TableModel:
    """A fake model: the next-token distribution depends only on the previous token.

    `table` maps a previous token to {next token: probability} (each row sums to 1; every other
    token gets ~1e-6); a token without a row is followed by </s>. Attention looks at source
    position `attend[prev]` (default 0). `calls` counts decoding steps.
    """

    def __init__(self, table: dict[int, dict[int, float]], vocab: int = 8,
                 attend: dict[int, int] | None = None):
        self.vocab, self.attend, self.calls = vocab, attend or {}, 0
        self.log_probs = torch.empty(vocab, vocab)  # (V prev, V next)
        for prev in range(vocab):
            probs = torch.full((vocab,), 1e-6)
            for token, p in table.get(prev, {EOS_ID: 1.0}).items():
                probs[token] = p
            self.log_probs[prev] = (probs / probs.sum()).log()

    def encode(self, src, src_lengths):
        values = torch.zeros(src.size(0), src.size(1), 1)  # (B, S, 1)
        return Memory(values, values, src != PAD_ID, torch.zeros(src.size(0), 1))

    def init_state(self, memory):
        hidden = torch.zeros(memory.summary.size(0), 1)  # (B, 1)
        return DecoderState(hidden, None, hidden)

    def decode_step(self, prev, state, memory):
        self.calls += 1
        weights = torch.zeros(memory.mask.shape)  # (B, S)
        positions = torch.tensor([self.attend.get(int(p), 0) for p in prev])
        weights[torch.arange(len(prev)), positions] = 1.0
        return self.log_probs[prev].clone(), state, weights


def beam_config(**settings) -> SearchConfig:
    """The search.* settings of a direct beam_search call: no length penalty unless given."""
    return SearchConfig(**{"length_penalty": 0.0, **settings})


def one_sentence(length: int = 3):
    return torch.full((1, length), 9, dtype=torch.long), torch.tensor([length])


def log(*probs: float) -> float:
    return sum(math.log(p) for p in probs)


# Greedy takes A (0.6) and then ends: A </s> = 0.6 * 0.4 = 0.24.
# The best sequence starts with the less likely B: B </s> = 0.4 * 0.9 = 0.36.
GREEDY_TRAP = {BOS_ID: {A: 0.6, B: 0.4}, A: {EOS_ID: 0.4, C: 0.3, D: 0.3}, B: {EOS_ID: 0.9, C: 0.1}}


def test_beam_finds_the_best_sequence_that_greedy_misses():
    src, lengths = one_sentence()
    greedy = greedy_search(TableModel(GREEDY_TRAP), src, lengths)[0][0]
    beam = beam_search(TableModel(GREEDY_TRAP), src, lengths, config=beam_config(beam_size=2))[0][0]
    assert greedy.tokens == [A]
    assert greedy.log_prob == pytest.approx(log(0.6, 0.4), abs=1e-3)
    assert beam.tokens == [B]
    assert beam.log_prob == pytest.approx(log(0.4, 0.9), abs=1e-3)
    assert beam.ended and beam.score == pytest.approx(beam.log_prob)  # alpha 0: no penalty


# Short: A </s> = 0.5 * 0.8 = 0.400 (2 steps). Long: B C </s> = 0.45 * 0.9 * 0.95 = 0.385 (3 steps).
# Plain log-probability prefers the short one; alpha = 1 divides by (5+2)/6 vs (5+3)/6 and
# prefers the long one: -0.916 / 1.167 = -0.785 < -0.955 / 1.333 = -0.716.
SHORT_OR_LONG = {BOS_ID: {A: 0.5, B: 0.45, D: 0.05}, A: {EOS_ID: 0.8, D: 0.2}, B: {C: 0.9, D: 0.1},
                 C: {EOS_ID: 0.95, D: 0.05}}


def test_length_penalty_changes_the_choice():
    src, lengths = one_sentence()
    plain = beam_search(TableModel(SHORT_OR_LONG), src, lengths,
                        config=beam_config(beam_size=3, length_penalty=0.0))[0][0]
    normalized = beam_search(TableModel(SHORT_OR_LONG), src, lengths,
                             config=beam_config(beam_size=3, length_penalty=1.0))[0][0]
    assert plain.tokens == [A]
    assert normalized.tokens == [B, C]
    assert normalized.score == pytest.approx(normalized.log_prob / length_penalty(3, 1.0))
    assert length_penalty(3, 1.0) == pytest.approx(8 / 6)


def test_n_best_is_sorted_and_distinct():
    src, lengths = one_sentence()
    hyps = beam_search(TableModel(GREEDY_TRAP), src, lengths,
                       config=beam_config(beam_size=4, n_best=3))[0]
    assert len(hyps) == 3
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
    assert len({tuple(h.tokens) for h in hyps}) == 3
    assert hyps[0].tokens == [B] and hyps[1].tokens == [A]


# Step 1: B </s> (0.36) finishes while A C (0.42) is still better and open. Step 2: every open
# hypothesis is at most 0.21, so with alpha 0 none can win any more: stop, though the best
# candidate of that step (A C D, 0.21) does not end in </s>.
FINISH_EARLY = {BOS_ID: {A: 0.6, B: 0.4}, A: {C: 0.7, D: 0.3}, B: {EOS_ID: 0.9, C: 0.1},
                C: {D: 0.5, A: 0.5}}


def test_finished_hypothesis_is_kept_and_search_stops_when_nothing_can_beat_it():
    model = TableModel(FINISH_EARLY)
    src, lengths = one_sentence()
    best = beam_search(model, src, lengths,
                       config=beam_config(beam_size=3, length_penalty=0.0))[0][0]
    assert best.tokens == [B] and best.ended
    assert best.log_prob == pytest.approx(log(0.4, 0.9), abs=1e-4)
    assert model.calls == 3


def test_sound_bound_keeps_searching_with_length_penalty():
    # With alpha 1 an open hypothesis could still win when longer (its log-probability over a
    # penalty that grows with length), so the search must go on.
    model = TableModel(FINISH_EARLY)
    src, lengths = one_sentence()
    beam_search(model, src, lengths, config=beam_config(beam_size=3, length_penalty=1.0))
    assert model.calls > 3


def test_attention_rows_match_tokens_and_eos():
    src, lengths = one_sentence(4)
    hyp = beam_search(TableModel(SHORT_OR_LONG, attend={B: 2}), src, lengths,
                      config=beam_config(beam_size=2, length_penalty=1.0))[0][0]
    assert hyp.tokens == [B, C]
    assert hyp.attention.shape == (3, 4)  # B, C and the step that produced </s>
    assert hyp.attention[1].argmax() == 2  # C was produced after B, looking at position 2


def test_no_eos_stops_at_the_maximum_length():
    table = {BOS_ID: {A: 1.0}, A: {A: 1.0}}  # never ends by itself
    src, lengths = one_sentence(3)
    limit = math.ceil(1.5 * 3) + 10
    for hyp in (greedy_search(TableModel(table), src, lengths, max_length_ratio=1.5)[0][0],
                beam_search(TableModel(table), src, lengths,
                            config=beam_config(beam_size=3, max_length_ratio=1.5))[0][0]):
        assert hyp.tokens == [A] * limit
        assert not hyp.ended
        assert hyp.attention.shape == (limit, 3)


def test_never_an_empty_output():
    # The model would end at once; the search takes the best first word instead.
    src, lengths = one_sentence()
    table = {BOS_ID: {EOS_ID: 0.9, B: 0.06, A: 0.04}}
    for hyp in (greedy_search(TableModel(table), src, lengths)[0][0],
                beam_search(TableModel(table), src, lengths,
                            config=beam_config(beam_size=3))[0][0]):
        assert hyp.tokens == [B] and hyp.ended and hyp.attention.shape == (2, 3)


def test_specials_are_never_produced():
    table = {BOS_ID: {PAD_ID: 0.5, BOS_ID: 0.3, A: 0.2}}
    src, lengths = one_sentence()
    assert greedy_search(TableModel(table), src, lengths)[0][0].tokens == [A]
    assert beam_search(TableModel(table), src, lengths,
                       config=beam_config(beam_size=2))[0][0].tokens == [A]


def test_sentences_in_a_batch_do_not_disturb_each_other():
    src = torch.tensor([[9, 9, 9, 9, 9], [9, 9, PAD_ID, PAD_ID, PAD_ID]])
    lengths = torch.tensor([5, 2])
    hyps = beam_search(TableModel(GREEDY_TRAP), src, lengths, config=beam_config(beam_size=2))
    assert [h[0].tokens for h in hyps] == [[B], [B]]
    assert hyps[1][0].attention.shape == (2, 2)  # only the real source positions


def _random_model(attention: str):
    torch.manual_seed(0)
    config = ModelConfig(dropout=0.0, rnn=RNNConfig(embed_size=16, encoder_hidden=16, decoder_hidden=32,
                                                    attention=attention, attention_size=16, readout_size=16))
    model = build_model(config, 30, 25).eval()
    with torch.no_grad():  # sharper distributions, so that the input matters
        model.output_layer.weight *= 4.0
    return GrowingEos(model)


def _random_batch(seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 1, 4, 12, 3, 9, 2, 5])
    src = torch.randint(4, 30, (len(lengths), int(lengths.max())), generator=generator)
    src[torch.arange(src.size(1)) >= lengths.unsqueeze(1)] = PAD_ID
    return src, lengths


@pytest.mark.parametrize("attention,alpha", [("additive", 0.0), ("additive", 1.0), ("none", 0.6)])
def test_beam_size_1_is_exactly_greedy(attention, alpha):
    model = _random_model(attention)
    src, lengths = _random_batch()
    greedy = greedy_search(model, src, lengths, alpha=alpha, max_length_ratio=2.0)
    beam = beam_search(model, src, lengths, config=beam_config(beam_size=1, length_penalty=alpha))
    assert [g[0].tokens for g in greedy] == [b[0].tokens for b in beam]
    assert len({len(g[0].tokens) for g in greedy}) > 2  # varied lengths
    assert 0 < sum(g[0].ended for g in greedy) < len(greedy)  # some cut at the length limit
    for g, b in zip(greedy, beam):
        assert g[0].ended == b[0].ended
        assert g[0].score == pytest.approx(b[0].score, abs=1e-5)
        assert g[0].log_prob == pytest.approx(b[0].log_prob, abs=1e-5)
        if attention == "none":
            assert g[0].attention is None and b[0].attention is None
        else:
            np.testing.assert_allclose(g[0].attention, b[0].attention, atol=1e-6)


def test_beam_mostly_scores_above_greedy_on_a_real_model():
    """Not on every sentence: greedy's path can fall out of a beam of 5 early (a search error
    a wider beam may undo), but a working beam search wins on most sentences and in sum."""
    model = _random_model("additive")
    src, lengths = _random_batch(seed=2)
    greedy = greedy_search(model, src, lengths)
    beam = beam_search(model, src, lengths, config=beam_config(beam_size=5))
    # A greedy output cut at the length limit may not be reachable by beam: compare the ended.
    pairs = [(g[0].score, b[0].score) for g, b in zip(greedy, beam) if g[0].ended]
    assert len(pairs) >= 3
    assert sum(b >= g - 1e-5 for g, b in pairs) >= len(pairs) - 1
    assert sum(b for _, b in pairs) > sum(g for g, _ in pairs)


def test_search_entry_point_checks_n_best_and_dispatches():
    model = _random_model("general")
    src, lengths = _random_batch()
    with pytest.raises(NMTError, match="n_best"):
        search(model, src, lengths, config=SearchConfig(beam_size=2, n_best=3))
    one = search(model, src, lengths, config=SearchConfig(beam_size=1))
    assert [h[0].tokens for h in one] == [h[0].tokens for h in greedy_search(model, src, lengths)]
    three = search(model, src, lengths, config=SearchConfig(beam_size=4, n_best=3),
                   keep_attention=False)
    assert all(len(h) == 3 and h[0].attention is None for h in three)


def test_search_parameters_are_keywords_in_one_order():
    """Every entry point: (model, src, src_lengths, *, ...), the keywords in one order, so that
    greedy_search(m, s, l, 2.0, 1.0) cannot swap alpha and max_length_ratio unnoticed."""
    order = ["config", "beam_size", "n_best", "alpha", "word_reward", "coverage_penalty", "stop",
             "max_length_ratio", "keep_attention"]
    for entry in (search, greedy_search, beam_search):
        params = inspect.signature(entry).parameters
        assert list(params)[:3] == ["model", "src", "src_lengths"], entry.__name__
        keywords = list(params)[3:]
        assert all(params[k].kind is inspect.Parameter.KEYWORD_ONLY for k in keywords), entry.__name__
        assert keywords == [k for k in order if k in keywords], entry.__name__
    src, lengths = one_sentence()
    with pytest.raises(TypeError):
        greedy_search(TableModel(GREEDY_TRAP), src, lengths, 2.0, 1.0)


def test_unknown_words_take_the_most_attended_source_token():
    attention = np.array([[0.8, 0.1, 0.1], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]])  # (T, S)
    tokens = ["<unk>", "likes", "<unk>"]
    ids = [UNK_ID, 9, UNK_ID]
    assert replace_unknowns(tokens, ids, attention, ["汤姆", "喜欢", "猫"]) == ["汤姆", "likes", "猫"]
    assert replace_unknowns(tokens, ids, None, ["汤姆", "喜欢", "猫"]) == tokens


def test_unknown_word_replacement_through_the_search():
    # The model emits <unk> after A while attending to source position 1.
    table = {BOS_ID: {A: 1.0}, A: {UNK_ID: 1.0}}
    src, lengths = one_sentence(3)
    hyp = beam_search(TableModel(table, attend={A: 1}), src, lengths,
                      config=beam_config(beam_size=2))[0][0]
    assert hyp.tokens == [A, UNK_ID]
    out = replace_unknowns(["a", "<unk>"], hyp.tokens, hyp.attention, ["玛丽", "Zhang", "。"])
    assert out == ["a", "Zhang"]


def test_beam_scores_equal_the_model_score_of_the_returned_sequences():
    # Teacher forcing re-scores each n-best hypothesis: equal log-probabilities show that beam
    # search reorders decoder states, tokens and scores consistently across steps.
    model = _random_model("additive").model  # the real model, without the </s> schedule
    src, lengths = _random_batch(seed=3)
    found = beam_search(model, src, lengths,
                        config=beam_config(beam_size=4, n_best=3, length_penalty=0.0))
    for i, hyps in enumerate(found):
        for hyp in hyps:
            target = [BOS_ID, *hyp.tokens] + ([EOS_ID] if hyp.ended else [])
            tgt_in = torch.tensor([target[:-1]])  # (1, T)
            with torch.no_grad():
                logits, _ = model(src[i : i + 1, : lengths[i]], lengths[i : i + 1], tgt_in)
            log_probs = logits.log_softmax(-1)[0]  # (T, V)
            expected = log_probs.gather(1, torch.tensor(target[1:]).unsqueeze(1)).sum()
            assert hyp.log_prob == pytest.approx(float(expected), abs=1e-3)
