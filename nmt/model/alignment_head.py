"""An alignment head: where target word y_i comes from, read with y_i itself in view.

The translation attention of step i is computed before y_i is known: it says where the model
looks to *predict* the next word, which is not always where that word comes from. Aligners
(and Garg et al., 2019, whose best Transformer alignments come from a layer that sees the
whole target) look with the word in view. This head scores every source position j against

    q_i = W_q [s_i; emb(y_i)]        the decoder state of step i and the word it then emits
    k_j = W_k h_j                    the encoder state of source token j
    a_ij = softmax_j q_i·k_j / sqrt(d)

It is trained only by the guided alignment loss (nmt/align/guided.py) and reads the model's
states detached: it learns to read alignments off the translation model without changing a
single translation. The alignment tool (scripts/align.py) uses it where the model has one.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn


class AlignmentHead(nn.Module):
    def __init__(self, state_size: int, embed_size: int, value_size: int, size: int):
        super().__init__()
        self.query_layer = nn.Linear(state_size + embed_size, size)
        self.key_layer = nn.Linear(value_size, size, bias=False)
        self.scale = 1.0 / math.sqrt(size)

    def forward(self, states: Tensor, next_embedded: Tensor, values: Tensor, mask: Tensor) -> Tensor:
        """states (B, T, H), next_embedded (B, T, E): emb(y_i), values (B, S, D), mask (B, S)
        → weights (B, T, S), zero on padding."""
        queries = self.query_layer(torch.cat([states, next_embedded], dim=-1).detach())  # (B, T, A)
        keys = self.key_layer(values.detach())  # (B, S, A)
        scores = torch.bmm(queries, keys.transpose(1, 2)) * self.scale  # (B, T, S)
        return torch.softmax(scores.masked_fill(~mask[:, None, :], float("-inf")), dim=-1)
