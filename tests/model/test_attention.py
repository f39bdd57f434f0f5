"""Attention variants: shapes, masking, normalisation, statelessness."""

import pytest
import torch

from nmt.model.attention import make_attention

KINDS = ["additive", "dot", "general", "scaled_dot"]


def _inputs(batch=3, src_len=5, size=8):
    torch.manual_seed(0)
    values = torch.randn(batch, src_len, size)  # (B, S, D)
    query = torch.randn(batch, size)  # (B, Q)
    lengths = torch.tensor([5, 3, 1])
    mask = torch.arange(src_len)[None, :] < lengths[:, None]  # (B, S)
    return query, values, mask


@pytest.mark.parametrize("kind", KINDS)
def test_weights_are_a_distribution_over_real_tokens(kind):
    attention = make_attention(kind, query_size=8, value_size=8, hidden_size=6)
    query, values, mask = _inputs()
    keys = attention.project_keys(values)
    context, weights = attention(query, keys, values, mask, summary=values[:, 0])
    assert context.shape == (3, 8) and weights.shape == (3, 5)
    assert torch.all(weights[~mask] == 0), "padding must get exactly zero weight"
    torch.testing.assert_close(weights.sum(dim=1), torch.ones(3))
    # The context is the weighted sum of the values.
    torch.testing.assert_close(context, torch.einsum("bs,bsd->bd", weights, values))
    # A single real token takes all the weight.
    torch.testing.assert_close(weights[2, 0], torch.tensor(1.0))


@pytest.mark.parametrize("kind", KINDS)
def test_padding_values_do_not_change_the_context(kind):
    attention = make_attention(kind, query_size=8, value_size=8, hidden_size=6)
    query, values, mask = _inputs()
    noisy = values.clone()
    noisy[~mask] = 1000.0
    context, _ = attention(query, attention.project_keys(values), values, mask, values[:, 0])
    context_noisy, _ = attention(query, attention.project_keys(noisy), noisy, mask, values[:, 0])
    torch.testing.assert_close(context, context_noisy)


@pytest.mark.parametrize("kind", KINDS)
def test_attention_is_stateless(kind):
    attention = make_attention(kind, query_size=8, value_size=8, hidden_size=6)
    query, values, mask = _inputs()
    keys = attention.project_keys(values)
    first = attention(query, keys, values, mask, values[:, 0])[1]
    attention(torch.randn(3, 8), keys, values, mask, values[:, 0])  # another query in between
    torch.testing.assert_close(attention(query, keys, values, mask, values[:, 0])[1], first)


def test_scaled_dot_divides_dot_scores_by_sqrt_d():
    dot = make_attention("dot", 8, 8, 6)
    scaled = make_attention("scaled_dot", 8, 8, 6)
    query, values, _ = _inputs()
    torch.testing.assert_close(scaled.score(query[:, None], values), dot.score(query[:, None], values) / 8**0.5)


def test_additive_attention_prefers_the_key_that_matches_the_query():
    """Decoding 'XiaoMing' from 小明/喜欢/小红 should look at 小明: a hand-set additive scorer."""
    attention = make_attention("additive", query_size=3, value_size=3, hidden_size=3)
    with torch.no_grad():
        attention.key_layer.weight.copy_(torch.eye(3))
        attention.query_layer.weight.copy_(torch.eye(3))
        attention.query_layer.bias.zero_()
        attention.energy.weight.copy_(torch.full((1, 3), 3.0))
    values = torch.eye(3).unsqueeze(0) * 4  # 小明, 喜欢, 小红 as one-hot states, (1, 3, 3)
    # W s lifts only 小明's key out of tanh's saturated floor: -2 + 4 = 2 on its own axis.
    query = torch.tensor([[-2.0, -6.0, -6.0]])
    _, weights = attention(query, attention.project_keys(values), values,
                           torch.ones(1, 3, dtype=torch.bool), values[:, 0])
    assert weights.argmax().item() == 0 and weights[0, 0] > 0.9


def test_no_attention_gives_the_fixed_summary_and_no_weights():
    attention = make_attention("none", 8, 8, 6)
    query, values, mask = _inputs()
    summary = torch.randn(3, 8)
    context, weights = attention(query, attention.project_keys(values), values, mask, summary)
    assert weights is None
    torch.testing.assert_close(context, summary)


@pytest.mark.parametrize("kind", KINDS + ["none"])
def test_all_steps_at_once_equal_one_step_at_a_time(kind):
    """A (B, T, Q) query (the decoder's fast path) gives each step what a (B, Q) query gives."""
    attention = make_attention(kind, query_size=8, value_size=8, hidden_size=6)
    _, values, mask = _inputs()
    queries = torch.randn(3, 4, 8)  # (B, T, Q)
    keys, summary = attention.project_keys(values), values[:, 1]
    contexts, weights = attention(queries, keys, values, mask, summary)
    assert contexts.shape == (3, 4, 8)
    for t in range(4):
        context, step_weights = attention(queries[:, t], keys, values, mask, summary)
        torch.testing.assert_close(contexts[:, t], context)
        if weights is not None:
            torch.testing.assert_close(weights[:, t], step_weights)


def test_dot_attention_needs_equal_sizes():
    with pytest.raises(ValueError, match="query size"):
        make_attention("dot", query_size=4, value_size=8, hidden_size=6)
