"""The encoder: source embeddings read by a bidirectional RNN, both directions concatenated."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmt.data.vocab import PAD_ID


class Encoder(nn.Module):
    """h_j = [forward_j; backward_j], so each state sees the whole sentence around word j."""

    def __init__(self, rnn: str, vocab_size: int, embed_size: int, hidden_size: int,
                 layers: int, dropout: float):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embed_size, padding_idx=PAD_ID)
        rnn_class = nn.GRU if rnn == "gru" else nn.LSTM
        self.rnn = rnn_class(embed_size, hidden_size, num_layers=layers, batch_first=True,
                             bidirectional=True, dropout=dropout if layers > 1 else 0.0)
        self.dropout = nn.Dropout(dropout)
        self.output_size = 2 * hidden_size

    def forward(self, src: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        """src (B, S) token ids, src_lengths (B,) → states (B, S, 2H), summary (B, 2H).

        The summary is the last forward state and the first backward state of the top layer:
        the fixed-length vector a plain encoder-decoder must squeeze the sentence into.
        """
        embedded = self.dropout(self.embed(src))  # (B, S, E)
        # Packing keeps the backward direction from starting on padding.
        packed = pack_padded_sequence(embedded, src_lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        packed_states, final = self.rnn(packed)
        states, _ = pad_packed_sequence(packed_states, batch_first=True,
                                        total_length=src.size(1))  # (B, S, 2H)
        final_hidden = final[0] if isinstance(final, tuple) else final  # LSTM gives (h, c)
        summary = torch.cat([final_hidden[-2], final_hidden[-1]], dim=1)  # (B, 2H)
        return self.dropout(states), summary
