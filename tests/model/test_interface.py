"""The model contract in code (nmt/model/interface.py): both families and the Ensemble keep it."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from nmt.config.schema import ModelConfig
from nmt.data.vocab import PAD_ID
from nmt.errors import NMTError
from nmt.model import build_model, has_posterior, target_order
from nmt.model.ensemble import Ensemble
from nmt.model.interface import Reorderable, StepDecoder, TranslationModel

SRC_VOCAB, TGT_VOCAB = 20, 15


def _models() -> dict[str, TranslationModel]:
    torch.manual_seed(0)
    rnn = build_model(ModelConfig(), SRC_VOCAB, TGT_VOCAB).eval()
    transformer = build_model(ModelConfig(architecture="transformer"), SRC_VOCAB, TGT_VOCAB).eval()
    return {"rnn": rnn, "transformer": transformer, "ensemble": Ensemble([rnn, transformer]).eval(),
            "rnn ensemble": Ensemble([rnn, rnn]).eval()}


def _batch() -> tuple[Tensor, Tensor, Tensor]:
    src = torch.tensor([[5, 6, 7, 8], [9, 10, PAD_ID, PAD_ID]])  # (B, S)
    tgt_in = torch.tensor([[1, 4, 5], [1, 6, 7]])  # (B, T), <s> first
    return src, torch.tensor([4, 2]), tgt_in


@pytest.mark.parametrize("name", ["rnn", "transformer", "ensemble", "rnn ensemble"])
def test_both_families_and_the_ensemble_keep_the_contract(name):
    model = _models()[name]
    assert isinstance(model, TranslationModel) and isinstance(model, StepDecoder)
    src, lengths, tgt_in = _batch()
    with torch.no_grad():
        memory = model.encode(src, lengths)
        state = model.init_state(memory)
        assert isinstance(memory, Reorderable) and isinstance(state, Reorderable)
        log_probs, state, weights = model.decode_step(tgt_in[:, 0], state, memory)
        assert log_probs.shape == (2, TGT_VOCAB) and weights is not None and weights.shape == (2, 4)
        rows = torch.tensor([1, 1, 0])  # beam search's reordering: 3 hypotheses from 2 rows
        log_probs, _, _ = model.decode_step(tgt_in[rows, 1], state.select(rows), memory.select(rows))
        assert log_probs.shape == (3, TGT_VOCAB)
        logits, forced = model(src, lengths, tgt_in)
    assert logits.shape == (2, 3, TGT_VOCAB) and forced is not None and forced.shape == (2, 3, 4)
    layers, heads = model.attention_grid
    assert isinstance(layers, int) and isinstance(heads, int)
    assert 0 <= model.alignment_layer < layers
    assert target_order(model) == model.target_order == "left_to_right"


def test_what_each_model_offers_beyond_search():
    models = _models()
    src, lengths, tgt_in = _batch()
    tgt_out = torch.tensor([[4, 5, 2], [6, 7, 2]])
    assert [has_posterior(models[n]) for n in models] == [True, False, False, True]
    posterior = models["rnn ensemble"].posterior_attention(src, lengths, tgt_in, tgt_out)
    assert posterior is not None and posterior.shape == (2, 3, 4)
    with pytest.raises(NotImplementedError, match="no posterior"):
        models["transformer"].posterior_attention(src, lengths, tgt_in, tgt_out)
    assert models["rnn"].attention_grid == (1, 1) and models["transformer"].attention_grid == (1, 4)
    heads = models["transformer"].alignment_heads(src, lengths, tgt_in)
    assert heads is not None and heads.shape == (2, 4, 3, 4)  # (B, heads, T, S)
    assert models["ensemble"].attention_grid == (1, 1)  # one attention: the members' mean
    for read_heads in (models["ensemble"].attention_heads, models["ensemble"].alignment_heads):
        with pytest.raises(NMTError, match="one member's checkpoint"):
            read_heads(src, lengths, tgt_in)


def test_the_target_order_is_the_models_and_its_ensembles():
    torch.manual_seed(0)
    model = build_model(ModelConfig(target_order="right_to_left"), SRC_VOCAB, TGT_VOCAB)
    assert target_order(model) == target_order(Ensemble([model, model])) == "right_to_left"


def test_a_model_that_leaves_out_part_of_the_contract_cannot_be_made():
    class SearchOnly(TranslationModel):
        def encode(self, src, src_lengths):
            return None

    with pytest.raises(TypeError, match="abstract"):
        SearchOnly()
