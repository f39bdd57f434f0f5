"""Attention: how much each source word matters for the target word being decoded now.

The decoder's previous state s_{i-1} is the query; the encoder states h_1..h_n are the values
and, once projected, the keys. A score function F gives weights a_ij = softmax_j F(s_{i-1}, h_j)
and the context c_i = sum_j a_ij h_j. The modules hold no state between calls: the projected keys
are computed once per sentence by `project_keys` and handed back in on every step. A query is one
step's (B, Q) or, when the decoder has every state already (Luong's order without input feeding),
all steps' (B, T, Q) at once.

    additive     F = v^T tanh(W s + U h)      Bahdanau et al. (2015)
    dot          F = s^T h                    Luong et al. (2015)
    general      F = s^T W h                  Luong et al. (2015)
    scaled_dot   F = s^T h / sqrt(d)          Vaswani et al. (2017)
    none         no weights: every step sees the same summary vector (Cho et al., 2014)
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class Attention(nn.Module):
    """Base class. Subclasses define `project_keys` (once per sentence) and `score` (each step)."""

    def project_keys(self, values: Tensor) -> Tensor:
        """values (B, S, D) → keys (B, S, K), computed once per source sentence."""
        return values

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        """queries (B, T, Q), keys (B, S, K) → unnormalised scores (B, T, S)."""
        raise NotImplementedError

    def forward(
        self, query: Tensor, keys: Tensor, values: Tensor, mask: Tensor, summary: Tensor
    ) -> tuple[Tensor, Tensor | None]:
        """Query (B, Q) → context (B, D), weights (B, S); query (B, T, Q) → (B, T, D), (B, T, S).
        Padding (mask False) gets exactly zero weight."""
        queries = query.unsqueeze(1) if query.dim() == 2 else query  # (B, T, Q)
        scores = self.score(queries, keys).masked_fill(~mask.unsqueeze(1), float("-inf"))  # (B, T, S)
        weights = torch.softmax(scores, dim=-1)  # (B, T, S)
        context = torch.bmm(weights, values)  # (B, T, D)
        if query.dim() == 2:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights


class AdditiveAttention(Attention):
    """Bahdanau: F(s, h) = v^T tanh(W s + U h). U h is the projected key, made once."""

    def __init__(self, query_size: int, value_size: int, hidden_size: int):
        super().__init__()
        self.key_layer = nn.Linear(value_size, hidden_size, bias=False)
        self.query_layer = nn.Linear(query_size, hidden_size, bias=True)
        self.energy = nn.Linear(hidden_size, 1, bias=False)

    def project_keys(self, values: Tensor) -> Tensor:
        return self.key_layer(values)  # (B, S, A)

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        projected = self.query_layer(queries).unsqueeze(2)  # (B, T, 1, A)
        return self.energy(torch.tanh(keys.unsqueeze(1) + projected)).squeeze(3)  # (B, T, S)


class DotAttention(Attention):
    """Luong dot: F(s, h) = s^T h; optionally scaled by 1/sqrt(d) (scaled_dot)."""

    def __init__(self, size: int, scaled: bool):
        super().__init__()
        self.scale = 1.0 / math.sqrt(size) if scaled else 1.0

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        return torch.bmm(queries, keys.transpose(1, 2)) * self.scale  # (B, T, S)


class GeneralAttention(Attention):
    """Luong general: F(s, h) = s^T W h. W h is the projected key, made once."""

    def __init__(self, query_size: int, value_size: int):
        super().__init__()
        self.key_layer = nn.Linear(value_size, query_size, bias=False)

    def project_keys(self, values: Tensor) -> Tensor:
        return self.key_layer(values)  # (B, S, Q)

    def score(self, queries: Tensor, keys: Tensor) -> Tensor:
        return torch.bmm(queries, keys.transpose(1, 2))  # (B, T, S)


class NoAttention(Attention):
    """The plain encoder-decoder: one fixed context, the encoder's summary, for every step."""

    def project_keys(self, values: Tensor) -> Tensor:
        return values[:, :0]  # (B, 0, D): nothing to look up

    def forward(self, query, keys, values, mask, summary):
        if query.dim() == 2:
            return summary, None
        return summary.unsqueeze(1).expand(-1, query.size(1), -1), None  # (B, T, D)


def make_attention(kind: str, query_size: int, value_size: int, hidden_size: int) -> Attention:
    """The attention module named by `model.rnn.attention`."""
    if kind == "additive":
        return AdditiveAttention(query_size, value_size, hidden_size)
    if kind in ("dot", "scaled_dot"):
        if query_size != value_size:
            raise ValueError(f"{kind} attention needs query size {query_size} == value size {value_size}")
        return DotAttention(value_size, scaled=kind == "scaled_dot")
    if kind == "general":
        return GeneralAttention(query_size, value_size)
    if kind == "none":
        return NoAttention()
    raise ValueError(f"unknown attention {kind!r}")
