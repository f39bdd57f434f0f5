"""The seq2seq model: shapes, step-wise decoding agrees with teacher forcing, it can learn."""

import pytest
import torch
import torch.nn.functional as F

from nmt.config.schema import ModelConfig, RNNConfig
from nmt.data.batching import Example, collate
from nmt.data.vocab import PAD_ID
from nmt.model import build_model

ATTENTIONS = ["additive", "dot", "general", "scaled_dot", "none"]
SMALL = dict(embed_size=16, encoder_hidden=12, decoder_hidden=24, attention_size=10, readout_size=16)


def small(dropout: float = 0.2, tie_embeddings: bool = False, **rnn) -> ModelConfig:
    """A small recurrent model: SMALL's sizes with `rnn` (model.rnn keys) laid over them."""
    return ModelConfig(dropout=dropout, tie_embeddings=tie_embeddings,
                       rnn=RNNConfig(**{**SMALL, **rnn}))


def _batch():
    examples = [Example([5, 6, 7, 8], [4, 5, 6]), Example([9, 10], [7, 8, 9, 10, 11]),
                Example([11], [12])]
    return collate(examples, [0, 1, 2])


@pytest.mark.parametrize("attention", ATTENTIONS)
@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_forward_shapes_and_masked_weights(attention, rnn):
    torch.manual_seed(0)
    model = build_model(small(cell=rnn, attention=attention), 20, 15).eval()
    batch = _batch()
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    B, T = batch.tgt_in.shape
    assert logits.shape == (B, T, 15)
    if attention == "none":
        assert weights is None
    else:
        assert weights.shape == (B, T, batch.src.size(1))
        padding = (batch.src == PAD_ID).unsqueeze(1).expand_as(weights)
        assert torch.all(weights[padding] == 0)
        torch.testing.assert_close(weights.sum(-1), torch.ones(B, T))


@pytest.mark.parametrize("query,input_feeding,rnn", [
    ("previous", True, "gru"), ("current", True, "gru"),
    ("current", False, "gru"), ("current", False, "lstm")])  # the last two: all steps in one call
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_decode_step_matches_teacher_forcing(attention, query, input_feeding, rnn):
    """Search decodes with decode_step; training with forward: they must be the same model."""
    torch.manual_seed(0)
    config = small(attention=attention, attention_query=query, input_feeding=input_feeding,
                   cell=rnn)
    model = build_model(config, 20, 15).eval()
    batch = _batch()
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    memory = model.encode(batch.src, batch.src_lengths)
    state = model.init_state(memory)
    for t in range(batch.tgt_in.size(1)):
        log_probs, state, step_weights = model.decode_step(batch.tgt_in[:, t], state, memory)
        torch.testing.assert_close(log_probs, F.log_softmax(logits[:, t], -1))
        if weights is not None:
            torch.testing.assert_close(step_weights, weights[:, t])


@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_all_steps_at_once_train_like_one_step_at_a_time(rnn):
    """Luong's order without input feeding runs the decoder RNN over all positions in one call:
    the loss and every gradient are those of the step-by-step loop it replaces."""
    config = small(attention="additive", attention_query="current", input_feeding=False,
                   cell=rnn, dropout=0.0)
    torch.manual_seed(0)
    model = build_model(config, 20, 15).train()
    batch = _batch()

    def loss_and_grads(forward):
        model.zero_grad()
        memory = model.encode(batch.src, batch.src_lengths)
        readouts, _ = forward(model.tgt_embed(batch.tgt_in), model.init_state(memory), memory)
        loss = model.output_layer(readouts).log_softmax(-1).sum()
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}

    fused_loss, fused = loss_and_grads(model.decoder)
    loop_loss, loop = loss_and_grads(model.decoder._forward_step_by_step)
    torch.testing.assert_close(fused_loss, loop_loss)
    for name in loop:
        torch.testing.assert_close(fused[name], loop[name], msg=name)


def test_keys_are_projected_once_per_sentence(monkeypatch):
    model = build_model(small(attention="additive"), 20, 15)
    calls = []
    original = model.decoder.attention.project_keys
    monkeypatch.setattr(model.decoder.attention, "project_keys",
                        lambda values: calls.append(1) or original(values))
    batch = _batch()
    model(batch.src, batch.src_lengths, batch.tgt_in)
    assert len(calls) == 1


def test_tied_embeddings_share_one_matrix():
    config = small(tie_embeddings=True, readout_size=16)
    model = build_model(config, 20, 15)
    assert model.output_layer.weight is model.tgt_embed.weight


def test_tied_embeddings_start_with_small_logits():
    """Embeddings start N(0, 1); as the output layer that gives logits of ~±10 at 512 wide, from
    which a tied run had not recovered hundreds of steps later."""
    torch.manual_seed(0)
    model = build_model(small(tie_embeddings=True, embed_size=256, readout_size=256), 20, 300).eval()
    batch = _batch()
    logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert logits.std() < 1.0


@pytest.mark.parametrize("attention", ["additive", "none"])
def test_a_tiny_model_overfits_a_handful_of_pairs(attention):
    torch.manual_seed(0)
    examples = [Example([5, 6, 7], [4, 5, 6]), Example([8, 9], [7, 8]),
                Example([10, 11, 12, 13], [9, 10, 11, 12]), Example([6, 5], [13, 4])]
    batch = collate(examples, [0, 1, 2, 3])
    model = build_model(small(attention=attention, dropout=0.0), 16, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(150):
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    model.eval()
    logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
    predicted = logits.argmax(-1).masked_fill(batch.tgt_out == PAD_ID, PAD_ID)
    assert torch.equal(predicted, batch.tgt_out)


def test_the_query_order_decides_what_the_first_step_attends_with():
    """previous: the query of step 1 is s_0 (the bridge); current: the state after reading <s>."""
    torch.manual_seed(0)
    batch = _batch()
    weights = {}
    for query in ("previous", "current"):
        torch.manual_seed(0)
        model = build_model(small(attention="dot", attention_query=query, decoder_hidden=24),
                            20, 15).eval()
        memory = model.encode(batch.src, batch.src_lengths)
        state = model.init_state(memory)
        expected_query = state.hidden if query == "previous" else None
        _, new_state, step_weights = model.decode_step(batch.tgt_in[:, 0], state, memory)
        query_used = expected_query if expected_query is not None else new_state.hidden
        scores = torch.bmm(memory.keys, query_used.unsqueeze(2)).squeeze(2)
        manual = torch.softmax(scores.masked_fill(~memory.mask, float("-inf")), dim=-1)
        torch.testing.assert_close(step_weights, manual)
        weights[query] = step_weights
    assert not torch.allclose(weights["previous"], weights["current"])
