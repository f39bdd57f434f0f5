"""The whole model: encoder, attention decoder and the output layer over the target vocabulary."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.config.schema import ModelConfig
from nmt.data.vocab import PAD_ID
from nmt.model.attention import make_attention
from nmt.model.decoder import Decoder, DecoderState, Memory
from nmt.model.encoder import Encoder
from nmt.model.interface import TranslationModel


class Seq2Seq(TranslationModel[Memory, DecoderState]):
    def __init__(self, config: ModelConfig, src_vocab_size: int, tgt_vocab_size: int):
        super().__init__()
        self.config = config
        rnn = config.rnn  # the recurrent family's section (model.rnn)
        self.encoder = Encoder(rnn.cell, src_vocab_size, rnn.embed_size, rnn.encoder_hidden,
                               rnn.encoder_layers, config.dropout)
        context_size = self.encoder.output_size
        attention = make_attention(rnn.attention, rnn.decoder_hidden, context_size,
                                   rnn.attention_size)
        self.tgt_embed = nn.Embedding(tgt_vocab_size, rnn.embed_size, padding_idx=PAD_ID)
        self.decoder = Decoder(rnn, context_size, attention, config.dropout)
        self.output_layer = nn.Linear(rnn.readout_size, tgt_vocab_size)
        if config.tie_embeddings:
            self.output_layer.weight = self.tgt_embed.weight
        self.embed_dropout = nn.Dropout(config.dropout)

    def encode(self, src: Tensor, src_lengths: Tensor) -> Memory:
        """src (B, S), src_lengths (B,) → the memory the decoder attends over."""
        values, summary = self.encoder(src, src_lengths)  # (B, S, D), (B, D)
        keys = self.decoder.attention.project_keys(values)  # (B, S, K): once per sentence
        return Memory(values, keys, src != PAD_ID, summary)

    def init_state(self, memory: Memory) -> DecoderState:
        return self.decoder.init_state(memory)

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor
                ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing. tgt_in (B, T) starts with <s> → logits (B, T, V), weights (B, T, S)."""
        memory = self.encode(src, src_lengths)
        embedded = self.embed_dropout(self.tgt_embed(tgt_in))  # (B, T, E)
        readouts, weights = self.decoder(embedded, self.init_state(memory), memory)  # (B, T, R)
        return self.output_layer(readouts), weights  # (B, T, V)

    def decode_step(self, prev_tokens: Tensor, state: DecoderState, memory: Memory
                    ) -> tuple[Tensor, DecoderState, Tensor | None]:
        """One search step: prev_tokens (B,) → log-probabilities (B, V), state, weights (B, S)."""
        readout, state, weights = self.decoder.step(self.tgt_embed(prev_tokens), state, memory)
        return F.log_softmax(self.output_layer(readout), dim=-1), state, weights

    # (decoder layers, heads) of the attention over the source: one attention
    attention_grid = (1, 1)
    alignment_layer = 0

    @property
    def target_order(self) -> str:
        return self.config.target_order

    @property
    def offers_posterior(self) -> bool:
        return True

    @torch.no_grad()
    def attention_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor | None:
        """The attention as (B, layers, heads, T, S), like the Transformer's: one layer, one head;
        None with attention none."""
        _, weights = self(src, src_lengths, tgt_in)
        return None if weights is None else weights[:, None, None]

    @torch.no_grad()
    def posterior_attention(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor, tgt_out: Tensor
                            ) -> Tensor | None:
        """Teacher forcing → (B, T, S): P(j | y_i, y_<i, x) ∝ a_ij · p(y_i | y_<i, x, c_i = h_j).

        The attention a_ij is chosen before the decoder knows which word comes; weighing it by how
        well source token j alone predicts the word that did come (y_i, given by tgt_out) is
        Bayes' rule with the attention as the prior (Shankar & Sarawagi's posterior attention,
        2019, here at alignment time only). None with attention none."""
        memory = self.encode(src, src_lengths)
        embedded = self.tgt_embed(tgt_in)  # (B, T, E)
        real = memory.mask.reshape(-1)  # (B*S,): the output layer runs on real tokens only
        state, rows = self.init_state(memory), []
        for t in range(tgt_in.size(1)):
            _, next_state, weights = self.decoder.step(embedded[:, t], state, memory)  # (B, S)
            if weights is None:
                return None
            readouts = self.decoder.readouts_per_source(embedded[:, t], state, next_state, memory)
            log_probs = F.log_softmax(self.output_layer(readouts.flatten(0, 1)[real]), dim=-1)  # (N, V)
            words = tgt_out[:, t].repeat_interleave(weights.size(1))[real]  # (N,) y_i per token
            likelihood = torch.zeros_like(weights)  # (B, S) log p(y_i | h_j); padding: a_ij = 0
            likelihood.view(-1)[real] = log_probs.gather(1, words[:, None]).squeeze(1)
            rows.append(torch.softmax(torch.log(weights) + likelihood, dim=-1))  # log 0: padding
            state = next_state
        return torch.stack(rows, dim=1)  # (B, T, S)

    def alignment_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor | None:
        """(B, heads, T, S) with one head; None with attention none."""
        heads = self.attention_heads(src, src_lengths, tgt_in)
        return None if heads is None else heads[:, 0]


def build_seq2seq(config: ModelConfig, src_vocab_size: int, tgt_vocab_size: int) -> Seq2Seq:
    """The model, with orthogonal recurrent weights and zero RNN biases (stable from step one);
    tied target embeddings start small, N(0, embed_size^-1/2), as the output layer they also are."""
    model = Seq2Seq(config, src_vocab_size, tgt_vocab_size)
    for name, param in model.named_parameters():
        if "rnn" in name or "cell" in name:
            if "weight_hh" in name:
                for chunk in param.data.chunk(3 if config.rnn.cell == "gru" else 4, dim=0):
                    nn.init.orthogonal_(chunk)
            elif "bias" in name:
                nn.init.zeros_(param)
    with torch.no_grad():
        if config.tie_embeddings:  # as the output layer's weights: N(0, 1) gave logits of ~±10
            nn.init.normal_(model.tgt_embed.weight, std=config.rnn.embed_size ** -0.5)
        model.tgt_embed.weight[PAD_ID].zero_()
    return model
