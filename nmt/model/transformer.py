"""The Transformer (Vaswani et al., 2017) behind the same interface as the recurrent Seq2Seq
(nmt/model/interface.py).

    encode(src, lengths)                → TransformerMemory: every decoder layer's cross-attention
                                          keys and values, projected once per sentence
    init_state(memory)                  → TransformerState: empty self-attention caches
    decode_step(prev, state, memory)    → log-probs (B, V), the caches grown by one position,
                                          the alignment (B, S)
    forward(src, lengths, tgt_in)       → logits (B, T, V), the alignment (B, T, S)
    attention_heads(src, lengths, tgt_in) → every decoder layer's cross-attention, every head:
                                          (B, layers, heads, T, S), for plots
    alignment_heads(src, lengths, tgt_in) → the alignment layer's heads (B, heads, T, S)

The alignment is the cross-attention of decoder layer `model.transformer.alignment_layer`, its heads
averaged. Embeddings start small, N(0, d^-1/2), and are scaled by sqrt(d) on the way in (as in
fairseq): the inputs then have unit size while tied output weights give small logits at first;
without the small start the issue's probe diverged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.config.schema import ModelConfig
from nmt.data.vocab import PAD_ID
from nmt.model.transformer_layers import (
    DecoderLayer,
    EncoderLayer,
    LearnedPositions,
    SinusoidalPositions,
)
from nmt.model.interface import TranslationModel


def _rows(tensors: list[Tensor], index: Tensor) -> list[Tensor]:
    return [t.index_select(0, index) for t in tensors]


@dataclass
class TransformerMemory:
    """What the decoder reads from the encoder, fixed for the whole sentence."""

    keys: list[Tensor]  # per decoder layer (B, h, S, dh): cross-attention keys
    values: list[Tensor]  # per decoder layer (B, h, S, dh)
    mask: Tensor  # (B, S) bool, True on real tokens

    def select(self, index: Tensor) -> "TransformerMemory":
        """Rows `index` of every tensor: how beam search copies a sentence per hypothesis."""
        return TransformerMemory(_rows(self.keys, index), _rows(self.values, index),
                                 self.mask.index_select(0, index))


@dataclass
class TransformerState:
    """The decoder's self-attention caches: keys and values of every target position so far."""

    keys: list[Tensor]  # per decoder layer (B, h, t, dh)
    values: list[Tensor]  # per decoder layer (B, h, t, dh)
    step: int  # t: the position the next token takes

    def select(self, index: Tensor) -> "TransformerState":
        return TransformerState(_rows(self.keys, index), _rows(self.values, index), self.step)


class Transformer(TranslationModel[TransformerMemory, TransformerState]):
    def __init__(self, config: ModelConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.config = config
        family = config.transformer  # the Transformer's section (model.transformer)
        d, pre_norm = family.d_model, family.norm == "pre"
        self.heads = family.heads
        self.src_embed = nn.Embedding(src_vocab_size, d, padding_idx=PAD_ID)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, d, padding_idx=PAD_ID)
        self.embed_scale = math.sqrt(d)
        self.positions = (SinusoidalPositions(d) if family.positions == "sinusoidal"
                          else LearnedPositions(d, family.max_positions))
        layer_args = (d, family.heads, family.ff_size, config.dropout, family.attention_dropout,
                      family.activation_dropout, pre_norm)
        self.encoder_layers = nn.ModuleList(EncoderLayer(*layer_args)
                                            for _ in range(family.encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(*layer_args)
                                            for _ in range(family.decoder_layers))
        # Pre-norm leaves each stack's output unnormalised: one final LayerNorm per stack.
        self.encoder_norm = nn.LayerNorm(d) if pre_norm else nn.Identity()
        self.decoder_norm = nn.LayerNorm(d) if pre_norm else nn.Identity()
        self.output_layer = nn.Linear(d, tgt_vocab_size)
        if config.tie_embeddings:
            self.output_layer.weight = self.tgt_embed.weight
        self.dropout = nn.Dropout(config.dropout)
        self.alignment_layer = family.alignment_layer % family.decoder_layers

    @property
    def target_order(self) -> str:
        return self.config.target_order

    @property
    def _decoders(self) -> Iterable[DecoderLayer]:
        """The decoder layers, typed (an nn.ModuleList hands back plain Modules)."""
        return cast(Iterable[DecoderLayer], self.decoder_layers)

    def _embed(self, embedding: nn.Embedding, tokens: Tensor, start: int = 0) -> Tensor:
        """tokens (B, L) → scaled embeddings plus positions start.., with dropout: (B, L, d)."""
        x = embedding(tokens) * self.embed_scale + self.positions(start, tokens.size(1))
        return self.dropout(x)

    def encode(self, src: Tensor, src_lengths: Tensor) -> TransformerMemory:
        """src (B, S), src_lengths (B,) → the memory every decoder layer attends over."""
        mask = src != PAD_ID  # (B, S)
        x = self._embed(self.src_embed, src)  # (B, S, d)
        for layer in self.encoder_layers:
            x = layer(x, mask)
        x = self.encoder_norm(x)  # (B, S, d)
        projected = [layer.cross_attention.project(x) for layer in self._decoders]
        return TransformerMemory([k for k, _ in projected], [v for _, v in projected], mask)

    def init_state(self, memory: TransformerMemory) -> TransformerState:
        batch = memory.mask.size(0)
        empty = [k.new_zeros(batch, k.size(1), 0, k.size(3)) for k in memory.keys]  # (B, h, 0, dh)
        return TransformerState(empty, [e.clone() for e in empty], 0)

    def _decode(self, tgt_in: Tensor, memory: TransformerMemory, all_layers: bool
                ) -> tuple[Tensor, list[Tensor | None]]:
        """Teacher forcing: tgt_in (B, T) → top states (B, T, d) and per layer its cross-attention
        weights (B, h, T, S): for the alignment layer only, unless all_layers."""
        y = self._embed(self.tgt_embed, tgt_in)  # (B, T, d)
        weights = []
        for i, layer in enumerate(self._decoders):
            y, w = layer(y, memory.keys[i], memory.values[i], memory.mask,
                         need_weights=all_layers or i == self.alignment_layer)
            weights.append(w)
        return self.decoder_norm(y), weights

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher forcing. tgt_in (B, T) starts with <s> → logits (B, T, V), weights (B, T, S)."""
        states, weights = self._decode(tgt_in, self.encode(src, src_lengths), all_layers=False)
        aligned = weights[self.alignment_layer]
        assert aligned is not None  # the alignment layer always hands back its weights
        return self.output_layer(states), aligned.mean(dim=1)

    @property
    def attention_grid(self) -> tuple[int, int]:
        """(decoder layers, heads) of the cross-attention."""
        return len(self.decoder_layers), self.heads

    @torch.no_grad()
    def attention_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Cross-attention of every decoder layer and head: (B, layers, heads, T, S)."""
        _, weights = self._decode(tgt_in, self.encode(src, src_lengths), all_layers=True)
        return torch.stack(cast(list[Tensor], weights), dim=1)  # all_layers: none is None

    def alignment_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Every head of the alignment layer's cross-attention: (B, heads, T, S)."""
        return self.attention_heads(src, src_lengths, tgt_in)[:, self.alignment_layer]

    def decode_step(self, prev_tokens: Tensor, state: TransformerState, memory: TransformerMemory
                    ) -> tuple[Tensor, TransformerState, Tensor]:
        """One search step: prev_tokens (B,) → log-probabilities (B, V), state, weights (B, S).

        Only the new position is computed; earlier positions' keys and values come from the cache.
        """
        y = self._embed(self.tgt_embed, prev_tokens.unsqueeze(1), start=state.step)  # (B, 1, d)
        keys, values, alignment = [], [], None
        for i, layer in enumerate(self._decoders):
            aligning = i == self.alignment_layer
            y, k, v, w = layer.step(y, state.keys[i], state.values[i], memory.keys[i],
                                    memory.values[i], memory.mask, need_weights=aligning)
            keys.append(k)
            values.append(v)
            alignment = w if aligning else alignment
        logits = self.output_layer(self.decoder_norm(y[:, 0]))  # (B, V)
        new_state = TransformerState(keys, values, state.step + 1)
        assert alignment is not None  # the alignment layer always hands back its weights
        return F.log_softmax(logits, dim=-1), new_state, alignment.mean(dim=1)[:, 0]  # (B, S)


def build_transformer(config: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> Transformer:
    """Xavier-uniform projections with zero biases; embeddings N(0, d^-1/2) with a zero <pad> row."""
    model = Transformer(config, src_vocab_size, tgt_vocab_size)
    for name, param in model.named_parameters():
        if name.startswith(("encoder_layers", "decoder_layers")) and "residual" not in name:
            if param.dim() > 1:
                nn.init.xavier_uniform_(param)
            else:
                nn.init.zeros_(param)
    std = config.transformer.d_model ** -0.5
    with torch.no_grad():
        for embedding in (model.src_embed, model.tgt_embed):
            nn.init.normal_(embedding.weight, std=std)
            embedding.weight[PAD_ID].zero_()
        if not config.tie_embeddings:
            nn.init.normal_(model.output_layer.weight, std=std)
        nn.init.zeros_(model.output_layer.bias)
    return model
