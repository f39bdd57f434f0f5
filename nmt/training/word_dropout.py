"""Word dropout: some tokens of a training batch become <unk> (Sennrich & Zhang, 2019).

Each source token is replaced by <unk> with probability `training.src_word_dropout`, a fresh
draw for every position of every batch; `training.tgt_word_dropout` does the same to the
decoder's inputs (never to the tokens it must predict, nor to <s>). A model that cannot count on
every word learns to use the context, which Sennrich & Zhang found to pay most on small corpora.
Gal & Ghahramani (2016) drop whole word types by zeroing their embeddings; replacing the id by
<unk> is the same idea done on the batch, so it works for any model family, needs no rescaling,
and the dropped words look to the model exactly like the unknown words it meets at test time.

Applied in the training step only (nmt/training/loop.py); validation and search never see it.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor

from nmt.data.batching import Batch
from nmt.data.vocab import BOS_ID, PAD_ID, UNK_ID


def drop_words(ids: Tensor, p: float) -> Tensor:
    """`ids` with each real token (not <pad> or <s>) replaced by <unk> with probability `p`.

    Draws from torch's global generator, whose state checkpoints save: a resumed run drops the
    same words an uninterrupted one would."""
    if p <= 0:
        return ids
    dropped = (torch.rand(ids.shape, device=ids.device) < p) & (ids != PAD_ID) & (ids != BOS_ID)
    return ids.masked_fill(dropped, UNK_ID)


def word_dropout(batch: Batch, src_p: float, tgt_p: float) -> Batch:
    """The batch with source tokens and decoder inputs dropped; targets (tgt_out) untouched."""
    if src_p <= 0 and tgt_p <= 0:
        return batch
    return replace(batch, src=drop_words(batch.src, src_p), tgt_in=drop_words(batch.tgt_in, tgt_p))
