"""Forced decoding: the model reads the given English (teacher forcing, no search) and we keep
the attention it paid while predicting each English token.

The batch is built exactly as training builds one (`collate`: tgt_in = <s> y_1 .. y_n), so row i
of the weights is the attention of the step that predicted y_i; the last row, the step that
predicts </s>, is dropped. Only the public interface `model(src, src_lengths, tgt_in)` →
(logits, weights (B, T, S) or None) is used, so any architecture that returns its (chosen)
cross-attention there aligns the same way.
"""

from __future__ import annotations

import numpy as np
import torch

from nmt.data.batching import Example, collate


def forced_attention(model, src_ids: list[list[int]], tgt_ids: list[list[int]],
                     batch_size: int = 64, device: torch.device | str | None = None
                     ) -> list[np.ndarray | None]:
    """One (len(tgt), len(src)) float32 matrix per pair, in input order; None for a pair with an
    empty side or for a model without attention. The model is put in eval mode (no dropout) and
    back into its former mode after."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    examples = [Example(list(s), list(t)) for s, t in zip(src_ids, tgt_ids, strict=True)]
    results: list[np.ndarray | None] = [None] * len(examples)
    order = sorted((i for i, ex in enumerate(examples) if ex.src and ex.tgt),
                   key=lambda i: (len(examples[i].tgt), len(examples[i].src)))
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                batch = collate(examples, order[start:start + batch_size]).to(device)
                _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, S)
                if weights is None:
                    return [None] * len(examples)
                weights = weights.float().cpu().numpy()
                for row, i in enumerate(batch.indices):
                    ex = examples[i]
                    results[i] = weights[row, : len(ex.tgt), : len(ex.src)].copy()  # (T, S)
    finally:
        model.train(was_training)
    return results
