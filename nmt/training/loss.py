"""The training objective: token-level cross-entropy over the target, padding ignored."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from nmt.data.batching import Batch
from nmt.data.vocab import PAD_ID


def summed_loss(model, batch: Batch, label_smoothing: float = 0.0, guide=None) -> torch.Tensor:
    """The batch's cross-entropy summed over its real target tokens (a scalar tensor); with
    `guide` (nmt/align/guided.py), plus its guided alignment loss on the attention weights."""
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V), (B, T, S)
    loss = F.cross_entropy(logits.flatten(0, 1).float(), batch.tgt_out.flatten(),
                           ignore_index=PAD_ID, label_smoothing=label_smoothing, reduction="sum")
    return loss if guide is None else loss + guide.loss(batch, weights)
