"""Forced decoding: the model reads the given English (teacher forcing, no search) and we keep
the attention it paid while predicting each English token.

The batch is built exactly as training builds one (`collate`: tgt_in = <s> y_1 .. y_n), so row i
of the weights is the attention of the step that predicted y_i; the last row, the step that
predicts </s>, is dropped. Only the public interface `model(src, src_lengths, tgt_in)` →
(logits, weights (B, T, S) or None) is used, so any architecture that returns its (chosen)
cross-attention there aligns the same way.

The English is given in reading order: a right_to_left model (model.target_order) reads it
reversed, and its rows are put back in reading order.

`posterior=True` asks a recurrent model for its posterior alignment instead
(`Seq2Seq.posterior_attention`: the attention reweighted by how well each source token alone
predicts the English token that came), the same shape.
"""

from __future__ import annotations

import numpy as np
import torch

from nmt.data.batching import Example, collate, in_model_order
from nmt.errors import NMTError
from nmt.model import has_posterior, inference, target_order


def forced_attention(model, src_ids: list[list[int]], tgt_ids: list[list[int]],
                     batch_size: int = 64, device: torch.device | str | None = None,
                     layer: int | None = None, head: int | None = None, posterior: bool = False
                     ) -> list[np.ndarray | None]:
    """One (len(tgt), len(src)) float32 matrix per pair, in input order; None for a pair with an
    empty side or for a model without attention. The model is put in eval mode (no dropout) and
    back into its former mode after.

    By default the weights are the model's own alignment (for a Transformer, its alignment
    layer's heads averaged); `layer` and `head` pick another decoder layer and one head instead
    (from `model.attention_heads`, which a recurrent model answers with one layer, one head)."""
    device = torch.device(device) if device is not None else next(model.parameters()).device
    reading = target_order(model)  # the order the model reads the English in
    examples = [Example(list(s), in_model_order(t, reading)) for s, t in zip(src_ids, tgt_ids, strict=True)]
    results: list[np.ndarray | None] = [None] * len(examples)
    order = sorted((i for i, ex in enumerate(examples) if ex.src and ex.tgt),
                   key=lambda i: (len(examples[i].tgt), len(examples[i].src)))
    with inference(model):
        for start in range(0, len(order), batch_size):
            batch = collate(examples, order[start:start + batch_size]).to(device)
            weights = _weights(model, batch, layer, head, posterior)  # (B, T, S)
            if weights is None:
                return [None] * len(examples)
            weights = weights.float().cpu().numpy()
            for row, i in enumerate(batch.indices):
                ex = examples[i]
                matrix = weights[row, : len(ex.tgt), : len(ex.src)]  # (T, S)
                results[i] = (matrix[::-1] if reading == "right_to_left" else matrix).copy()
    return results


def _weights(model, batch, layer: int | None, head: int | None, posterior: bool = False):
    """The attention of one batch, (B, T, S), or None for a model without attention."""
    if posterior:
        if not has_posterior(model):
            raise NMTError("--weights posterior needs a recurrent model (model.architecture: rnn; "
                           "every member of an ensemble); align a Transformer with its "
                           "cross-attention (--weights attention)")
        if layer is not None or head is not None:
            raise NMTError("--layer and --head choose a Transformer's attention; they do not go "
                           "with --weights posterior")
        return model.posterior_attention(batch.src, batch.src_lengths, batch.tgt_in, batch.tgt_out)
    if layer is None and head is None:
        return model(batch.src, batch.src_lengths, batch.tgt_in)[1]
    heads = model.attention_heads(batch.src, batch.src_lengths, batch.tgt_in)  # (B, L, H, T, S)
    if heads is None:
        return None
    layers, per_layer = heads.size(1), heads.size(2)
    if layer is None:
        layer = getattr(model, "alignment_layer", layers - 1)
    if not -layers <= layer < layers:
        raise NMTError(f"--layer {layer}: the model has {layers} decoder layer(s); use 0.."
                       f"{layers - 1}, or -1 for the last")
    if head is not None and not -per_layer <= head < per_layer:
        raise NMTError(f"--head {head}: the model has {per_layer} head(s) a layer; use 0.."
                       f"{per_layer - 1}, or leave it out for their average")
    chosen = heads[:, layer]  # (B, H, T, S)
    return chosen.mean(dim=1) if head is None else chosen[:, head]
