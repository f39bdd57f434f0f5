"""The attention decoder, one target word at a time, in the style of Bahdanau et al. (2015).

Step i, given the previous word y_{i-1} and the previous state s_{i-1}:

    c_i, a_i = attention(query=s_{i-1}, keys/values=h_1..h_n)      where to look now
    s_i      = RNN([emb(y_{i-1}); c_i; r_{i-1}], s_{i-1})          r_{i-1} only with input feeding
    r_i      = tanh(W [s_i; c_i; emb(y_{i-1})])                     deep output (readout)
    p(y_i)   = softmax(V r_i)                                      in Seq2Seq, for all steps at once

With `model.rnn.attention_query: current` (Luong's order) the RNN steps first, without c_i, and the
new state s_i is the query: s_i = RNN([emb(y_{i-1}); r_{i-1}], s_{i-1}); c_i = attention(s_i, h).
In that order and without input feeding nothing but s_{i-1} links a step to the one before, so
teacher forcing runs the RNN over all positions in one call and attends with every s_i at once.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import cast

import torch
from torch import Tensor, nn

from nmt.config.schema import RNNConfig
from nmt.model.attention import Attention


@dataclass
class Memory:
    """What the decoder reads from the encoder, fixed for the whole sentence."""

    values: Tensor  # (B, S, D) encoder states
    keys: Tensor  # (B, S, K) projected once per sentence
    mask: Tensor  # (B, S) bool, True on real tokens
    summary: Tensor  # (B, D) final encoder states, the fixed context of attention "none"

    def select(self, index: Tensor) -> "Memory":
        """Rows `index` of every tensor: how beam search copies a sentence per hypothesis."""
        return Memory(*(getattr(self, f.name).index_select(0, index) for f in fields(self)))


@dataclass
class DecoderState:
    hidden: Tensor  # (B, H) s_{i-1}
    cell: Tensor | None  # (B, H) LSTM cell, None for GRU
    readout: Tensor  # (B, R) r_{i-1}, fed back with input feeding

    def select(self, index: Tensor) -> "DecoderState":
        cell = None if self.cell is None else self.cell.index_select(0, index)
        return DecoderState(self.hidden.index_select(0, index), cell,
                            self.readout.index_select(0, index))


class Decoder(nn.Module):
    def __init__(self, rnn: RNNConfig, context_size: int, attention: Attention, dropout: float):
        """The sizes, cell, query order and input feeding come from the model's `model.rnn`
        section; `context_size` is the encoder's output width (both directions)."""
        super().__init__()
        embed_size, hidden_size, readout_size = rnn.embed_size, rnn.decoder_hidden, rnn.readout_size
        self.attention = attention
        self.input_feeding = rnn.input_feeding
        self.query_is_previous = rnn.attention_query == "previous"
        self.readout_size = readout_size
        rnn_input = (embed_size + (context_size if self.query_is_previous else 0)
                     + (readout_size if rnn.input_feeding else 0))
        self.cell = (nn.GRUCell(rnn_input, hidden_size) if rnn.cell == "gru"
                     else nn.LSTMCell(rnn_input, hidden_size))
        self.bridge = nn.Linear(context_size, hidden_size)
        self.readout = nn.Linear(hidden_size + context_size + embed_size, readout_size)
        self.dropout = nn.Dropout(dropout)

    def init_state(self, memory: Memory) -> DecoderState:
        """s_0 = tanh(W summary): the decoder starts from what the encoder read."""
        hidden = torch.tanh(self.bridge(memory.summary))  # (B, H)
        cell = torch.zeros_like(hidden) if isinstance(self.cell, nn.LSTMCell) else None
        readout = hidden.new_zeros(hidden.size(0), self.readout_size)  # (B, R)
        return DecoderState(hidden, cell, readout)

    def step(self, prev_embed: Tensor, state: DecoderState, memory: Memory
             ) -> tuple[Tensor, DecoderState, Tensor | None]:
        """prev_embed (B, E) → readout (B, R), the next state, attention weights (B, S) or None."""
        inputs = [prev_embed] + ([state.readout] if self.input_feeding else [])
        if self.query_is_previous:
            context, weights = self._attend(state.hidden, memory)  # (B, D), (B, S)
            inputs.insert(1, context)
        hidden, cell = self._run_cell(inputs, state)
        if not self.query_is_previous:
            context, weights = self._attend(hidden, memory)
        readout = self.dropout(torch.tanh(self.readout(torch.cat([hidden, context, prev_embed], dim=1))))
        return readout, DecoderState(hidden, cell, readout), weights

    def readouts_per_source(self, prev_embed: Tensor, state: DecoderState, next_state: DecoderState,
                            memory: Memory) -> Tensor:
        """(B, S, R): the readout r_i as it would be had the context c_i been h_j alone, for every
        source token j (posterior alignment, Seq2Seq.posterior_attention). `state` is s_{i-1} and
        `next_state` s_i of the step as it ran; in Bahdanau's order s_i itself reads c_i, so it is
        recomputed per j. No dropout: this is for a model in eval mode."""
        batch, length, _ = memory.values.shape
        rows = torch.arange(batch, device=prev_embed.device).repeat_interleave(length)  # (B*S,)
        contexts = memory.values.reshape(batch * length, -1)  # (B*S, D): h_j, sentence by sentence
        embed = prev_embed.index_select(0, rows)  # (B*S, E)
        if self.query_is_previous:
            before = state.select(rows)
            hidden, _ = self._run_cell([embed, contexts] + ([before.readout] if self.input_feeding
                                                            else []), before)
        else:
            hidden = next_state.hidden.index_select(0, rows)  # (B*S, H)
        readout = torch.tanh(self.readout(torch.cat([hidden, contexts, embed], dim=1)))
        return readout.view(batch, length, -1)  # (B, S, R)

    def _run_cell(self, inputs: list[Tensor], state: DecoderState) -> tuple[Tensor, Tensor | None]:
        """The recurrent cell on the concatenated inputs: (hidden (B, H), LSTM cell or None)."""
        if state.cell is None:
            return self.cell(torch.cat(inputs, dim=1), state.hidden), None
        return self.cell(torch.cat(inputs, dim=1), (state.hidden, state.cell))

    def _attend(self, query: Tensor, memory: Memory) -> tuple[Tensor, Tensor | None]:
        return self.attention(query, memory.keys, memory.values, memory.mask, memory.summary)

    def forward(self, embedded: Tensor, state: DecoderState, memory: Memory
                ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: embedded targets (B, T, E) → readouts (B, T, R), weights (B, T, S)."""
        if self.query_is_previous or self.input_feeding:
            return self._forward_step_by_step(embedded, state, memory)
        hidden = self._run_rnn(embedded, state)  # (B, T, H): s_1..s_T
        contexts, weights = self._attend(hidden, memory)  # (B, T, D), (B, T, S)
        readouts = torch.tanh(self.readout(torch.cat([hidden, contexts, embedded], dim=2)))
        return self.dropout(readouts), weights  # (B, T, R)

    def _run_rnn(self, embedded: Tensor, state: DecoderState) -> Tensor:
        """The cell over every position (B, T, E) → (B, T, H) in one call: the fused loop nn.GRU
        and nn.LSTM run, on this cell's own weights (the same numbers as stepping it)."""
        weights = [self.cell.weight_ih, self.cell.weight_hh, self.cell.bias_ih, self.cell.bias_hh]
        flags = (True, 1, 0.0, self.training, False, True)  # biases, layers, dropout, train, bidir, batch_first
        if state.cell is None:
            return torch.gru(embedded, state.hidden[None], weights, *flags)[0]
        return torch.lstm(embedded, (state.hidden[None], state.cell[None]), weights, *flags)[0]

    def _forward_step_by_step(self, embedded: Tensor, state: DecoderState, memory: Memory
                              ) -> tuple[Tensor, Tensor | None]:
        readouts, all_weights = [], []
        for t in range(embedded.size(1)):
            readout, state, weights = self.step(embedded[:, t], state, memory)
            readouts.append(readout)
            all_weights.append(weights)
        # weights are None at every step (attention none) or at none
        stacked_weights = (None if all_weights[0] is None
                           else torch.stack(cast(list[Tensor], all_weights), dim=1))
        return torch.stack(readouts, dim=1), stacked_weights
