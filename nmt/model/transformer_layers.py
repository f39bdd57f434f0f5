"""The Transformer's layers (Vaswani et al., 2017): multi-head attention, feed-forward, positions.

Attention, as in `attention.py`, gives weights a_ij = softmax_j F(q_i, k_j) and a context
sum_j a_ij v_j, with F(q, k) = q^T k / sqrt(d_head). Here every position makes its own query,
key and value by three learned projections of its state, and h heads do this side by side, each
in its own d_model/h-wide slice, so one head can follow word order while another aligns words:

    Q = X W_q,  K = Y W_k,  V = Y W_v         (B, heads, L, d_head) after the split
    head_n = softmax(Q_n K_n^T / sqrt(d_head)) V_n
    out    = [head_1; ...; head_h] W_o

Self-attention: X = Y = the layer's input (encoder: every source word; decoder: the words so far).
Cross-attention: X = the decoder, Y = the encoder's output; its weights are the model's alignment.

Self-attention always runs through torch's fused `scaled_dot_product_attention`, which returns no
weights; cross-attention computes softmax(QK^T/sqrt d) explicitly when weights are asked for (the
alignment layer, plots) and through the fused kernel otherwise.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def split_heads(x: Tensor, heads: int) -> Tensor:
    """(B, L, d) → (B, heads, L, d / heads)."""
    batch, length, width = x.shape
    return x.view(batch, length, heads, width // heads).transpose(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """(B, heads, L, d_head) → (B, L, heads * d_head)."""
    batch, heads, length, width = x.shape
    return x.transpose(1, 2).reshape(batch, length, heads * width)


class SelfAttention(nn.Module):
    """Every position attends over the positions of the same sequence (causally in the decoder)."""

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)  # the three projections as one matmul
        self.out = nn.Linear(d_model, d_model)

    def _project(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        batch, length, width = x.shape
        qkv = self.qkv(x).view(batch, length, 3, self.heads, width // self.heads)  # (B, L, 3, h, dh)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, h, L, dh)
        return q, k, v

    def forward(self, x: Tensor, key_mask: Tensor | None = None, causal: bool = False) -> Tensor:
        """x (B, L, d); key_mask (B, L) True on real tokens; causal: position i sees j <= i only."""
        q, k, v = self._project(x)
        mask = None if key_mask is None else key_mask[:, None, None, :]  # (B, 1, 1, L)
        context = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal,
            dropout_p=self.dropout if self.training else 0.0)  # (B, h, L, dh)
        return self.out(merge_heads(context))  # (B, L, d)

    def step(self, x: Tensor, past_keys: Tensor, past_values: Tensor
             ) -> tuple[Tensor, Tensor, Tensor]:
        """One new position x (B, 1, d) over the cached ones (B, h, t, dh) and itself.

        Returns the output (B, 1, d) and the caches grown by one position (B, h, t + 1, dh): the
        step projects only the new position, so its cost does not grow with the prefix's
        projections (only the attention itself reads the t + 1 keys)."""
        q, k, v = self._project(x)  # (B, h, 1, dh)
        keys, values = torch.cat([past_keys, k], dim=2), torch.cat([past_values, v], dim=2)
        context = F.scaled_dot_product_attention(q, keys, values)  # (B, h, 1, dh)
        return self.out(merge_heads(context)), keys, values


class CrossAttention(nn.Module):
    """Decoder positions attend over the encoder's output; keys and values are projected once
    per sentence (`project`), not once per decoding step."""

    def __init__(self, d_model: int, heads: int, dropout: float):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.query = nn.Linear(d_model, d_model)
        self.key_value = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def project(self, memory: Tensor) -> tuple[Tensor, Tensor]:
        """Encoder output (B, S, d) → keys, values (B, h, S, dh)."""
        keys, values = self.key_value(memory).chunk(2, dim=-1)  # (B, S, d) each
        return split_heads(keys, self.heads), split_heads(values, self.heads)

    def forward(self, x: Tensor, keys: Tensor, values: Tensor, key_mask: Tensor,
                need_weights: bool) -> tuple[Tensor, Tensor | None]:
        """x (B, T, d), key_mask (B, S) True on real source tokens → output (B, T, d) and, when
        asked, every head's weights (B, h, T, S), exactly 0 on padding."""
        q = split_heads(self.query(x), self.heads)  # (B, h, T, dh)
        mask = key_mask[:, None, None, :]  # (B, 1, 1, S)
        if not need_weights:
            context = F.scaled_dot_product_attention(
                q, keys, values, attn_mask=mask, dropout_p=self.dropout if self.training else 0.0)
            return self.out(merge_heads(context)), None
        scores = q @ keys.transpose(-1, -2) / math.sqrt(q.size(-1))  # (B, h, T, S)
        weights = torch.softmax(scores.float().masked_fill(~mask, float("-inf")), dim=-1)
        dropped = F.dropout(weights, self.dropout, self.training).to(values.dtype)
        context = dropped @ values  # (B, h, T, dh)
        return self.out(merge_heads(context)), weights


class FeedForward(nn.Module):
    """Two linear maps with a ReLU between, applied to every position alone."""

    def __init__(self, d_model: int, ff_size: int, activation_dropout: float):
        super().__init__()
        self.inner = nn.Linear(d_model, ff_size)
        self.outer = nn.Linear(ff_size, d_model)
        self.dropout = nn.Dropout(activation_dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.outer(self.dropout(F.relu(self.inner(x))))  # (B, L, d)


class Residual(nn.Module):
    """x + dropout(f(norm(x))) with pre-norm; norm(x + dropout(f(x))) with post-norm.

    Pre-norm (Wang et al., 2019; Xiong et al., 2020) keeps an identity path from input to output
    and trains without a careful warm-up; post-norm is the original Transformer's order."""

    def __init__(self, d_model: int, dropout: float, pre_norm: bool):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.pre_norm = pre_norm

    def before(self, x: Tensor) -> Tensor:
        """What the sublayer reads."""
        return self.norm(x) if self.pre_norm else x

    def after(self, x: Tensor, sublayer_out: Tensor) -> Tensor:
        """The layer's output, from its input and the sublayer's output."""
        y = x + self.dropout(sublayer_out)
        return y if self.pre_norm else self.norm(y)


class EncoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, ff_size: int, dropout: float,
                 attention_dropout: float, activation_dropout: float, pre_norm: bool):
        super().__init__()
        self.self_attention = SelfAttention(d_model, heads, attention_dropout)
        self.feed_forward = FeedForward(d_model, ff_size, activation_dropout)
        self.attention_residual = Residual(d_model, dropout, pre_norm)
        self.ff_residual = Residual(d_model, dropout, pre_norm)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        """x (B, S, d), mask (B, S) True on real tokens → (B, S, d)."""
        r = self.attention_residual
        x = r.after(x, self.self_attention(r.before(x), key_mask=mask))
        r = self.ff_residual
        return r.after(x, self.feed_forward(r.before(x)))


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, ff_size: int, dropout: float,
                 attention_dropout: float, activation_dropout: float, pre_norm: bool):
        super().__init__()
        self.self_attention = SelfAttention(d_model, heads, attention_dropout)
        self.cross_attention = CrossAttention(d_model, heads, attention_dropout)
        self.feed_forward = FeedForward(d_model, ff_size, activation_dropout)
        self.self_residual = Residual(d_model, dropout, pre_norm)
        self.cross_residual = Residual(d_model, dropout, pre_norm)
        self.ff_residual = Residual(d_model, dropout, pre_norm)

    def forward(self, y: Tensor, keys: Tensor, values: Tensor, src_mask: Tensor,
                need_weights: bool) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: y (B, T, d) → (B, T, d), cross-attention weights (B, h, T, S)."""
        r = self.self_residual
        y = r.after(y, self.self_attention(r.before(y), causal=True))
        return self._cross_and_feed_forward(y, keys, values, src_mask, need_weights)

    def step(self, y: Tensor, past_keys: Tensor, past_values: Tensor, keys: Tensor,
             values: Tensor, src_mask: Tensor, need_weights: bool
             ) -> tuple[Tensor, Tensor, Tensor, Tensor | None]:
        """One position y (B, 1, d) → output (B, 1, d), the grown self-attention caches, weights."""
        r = self.self_residual
        attended, past_keys, past_values = self.self_attention.step(r.before(y), past_keys,
                                                                    past_values)
        y = r.after(y, attended)
        y, weights = self._cross_and_feed_forward(y, keys, values, src_mask, need_weights)
        return y, past_keys, past_values, weights

    def _cross_and_feed_forward(self, y, keys, values, src_mask, need_weights):
        r = self.cross_residual
        attended, weights = self.cross_attention(r.before(y), keys, values, src_mask, need_weights)
        y = r.after(y, attended)
        r = self.ff_residual
        return r.after(y, self.feed_forward(r.before(y))), weights


class SinusoidalPositions(nn.Module):
    """PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...): any length, nothing learned."""

    inverse_frequency: Tensor  # a buffer: (d/2,)

    def __init__(self, d_model: int):
        super().__init__()
        inverse = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        self.register_buffer("inverse_frequency", inverse, persistent=False)  # (d/2,)

    def forward(self, start: int, length: int) -> Tensor:
        """Encodings of positions start .. start+length-1: (length, d)."""
        positions = torch.arange(start, start + length, device=self.inverse_frequency.device)
        angles = positions.float().unsqueeze(1) * self.inverse_frequency  # (L, d/2)
        return torch.stack([angles.sin(), angles.cos()], dim=2).flatten(1)  # (L, d)


class LearnedPositions(nn.Module):
    """One learned vector per position; positions past `max_positions` share the last one."""

    def __init__(self, d_model: int, max_positions: int):
        super().__init__()
        self.embed = nn.Embedding(max_positions, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)

    def forward(self, start: int, length: int) -> Tensor:
        positions = torch.arange(start, start + length, device=self.embed.weight.device)
        return self.embed(positions.clamp(max=self.embed.num_embeddings - 1))  # (L, d)
