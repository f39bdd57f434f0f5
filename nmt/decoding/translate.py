"""Decoding encoded sentences: source ids in, n-best hypotheses out, in input order.

`decode_ids` batches sentences by length, searches (nmt/decoding/search.py) and puts the results
back in input order; training's dev BLEU calls `translate_token_ids` on already-encoded
sentences. `alignment_heads` teacher-forces an output once more to read every head of the
attention. Raw text in and out is the Translator's (nmt/decoding/translator.py).

Outputs leave here in reading order: a right_to_left model's (model.target_order) are turned
around, attention rows too, and what is teacher-forced again is turned back for it, so callers
never ask which order a model writes in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import torch

from nmt.config.schema import SearchConfig
from nmt.data.batching import in_model_order
from nmt.data.vocab import BOS_ID, PAD_ID
from nmt.decoding.hypothesis import Hypothesis, reversed_hypothesis
from nmt.decoding.rerank import Reranker
from nmt.decoding.search import search
from nmt.decoding.workers import search_batches, worker_count
from nmt.model import MAX_SOURCE_TOKENS, TranslationModel, inference, target_order
from nmt.runtime import use_bf16


def decode_ids(model: TranslationModel, src_ids: list[list[int]], search_config: SearchConfig,
               device: torch.device | str | None = None, keep_attention: bool = False,
               progress: Callable[[int], None] | None = None,
               reranker: Reranker | None = None) -> list[list[Hypothesis]]:
    """Search every sentence of `src_ids` (source ids, no <s>/</s>); per sentence its n-best list.

    Sentences are sorted by length into batches of `search_config.batch_size` (less padding) and
    returned in input order. An empty sentence gets one empty hypothesis without running the
    model. The model is put in eval mode for the search and back into its former mode after.
    `progress(n)` is called after each batch with the number of sentences it held. A
    right_to_left model's hypotheses come back in reading order (see the module docstring).
    `search_config.workers`: processes searching batches side by side (nmt/decoding/workers.py;
    0: one per thread); the hypotheses are the same as with one. `search_config.bf16`: search
    and rescoring under bfloat16 autocast. `reranker` chooses among the whole beam (the search
    keeps search_config.beam_size hypotheses, then n_best of them are returned), where each batch
    was searched, so the workers rescore side by side too.
    """
    config = search_config
    if reranker is not None:  # the whole beam is the n-best list the rescoring models choose from
        config = dataclasses.replace(search_config, n_best=search_config.beam_size)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    bf16 = config.bf16 if isinstance(config.bf16, bool) else use_bf16(config.bf16, device, "search.bf16")
    reverse = target_order(model) == "right_to_left"
    # an empty sentence's one empty hypothesis; the others are searched
    results: list[list[Hypothesis] | None] = [
        None if len(ids) else [Hypothesis([], 0.0, 0.0, True, None)] for ids in src_ids]
    batches = length_batches(src_ids, config.batch_size)

    def search_batch(batch: list[int]) -> tuple[list[list[Hypothesis]], float]:
        rows = [list(src_ids[i])[:MAX_SOURCE_TOKENS] for i in batch]
        lengths = torch.tensor([len(r) for r in rows])  # (B,)
        src = torch.full((len(rows), int(lengths.max())), PAD_ID, dtype=torch.long)  # (B, S)
        for row, ids in enumerate(rows):
            src[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        # Autocast is entered here, in the process that searches: a forked worker's own thread.
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            found = search(model, src.to(device), lengths.to(device), config=config,
                           keep_attention=keep_attention)
            if reverse:
                found = [[reversed_hypothesis(h) for h in hyps] for hyps in found]
            if reranker is None:
                return found, 0.0
            before = reranker.seconds
            found = reranker.rerank(rows, found, config)
            return found, reranker.seconds - before

    forks = worker_count(config.workers, len(batches), device)
    with inference(model):
        for batch, (found, rerank_seconds) in search_batches(search_batch, batches, forks):
            for i, hyps in zip(batch, found):
                results[i] = hyps
            if reranker is not None and forks > 1:
                reranker.seconds += rerank_seconds  # a forked worker counted on its own copy
            if progress is not None:
                progress(len(batch))
    if reranker is not None:
        return [hyps[: search_config.n_best] for hyps in results]  # type: ignore[index]
    return results  # type: ignore[return-value]


def length_batches(src_ids: list[list[int]], batch_size: int) -> list[list[int]]:
    """The indices of the non-empty sentences, longest first, in batches of `batch_size`."""
    order = [i for i, ids in enumerate(src_ids) if len(ids)]
    order.sort(key=lambda i: -len(src_ids[i]))
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def translate_token_ids(model: TranslationModel, src_ids: list[list[int]], config: SearchConfig,
                        device: torch.device | str | None = None,
                        keep_attention: bool = True) -> list[Hypothesis]:
    """The best hypothesis for each encoded source sentence, in input order (see decode_ids): in
    this process, without bfloat16 autocast (training's dev BLEU)."""
    here = dataclasses.replace(config, workers=1, bf16=False)
    return [hyps[0] for hyps in decode_ids(model, src_ids, here, device, keep_attention)]


def alignment_heads(model: TranslationModel, src_ids: list[int], tgt_ids: list[int], rows: int,
                    device: torch.device | str) -> np.ndarray | None:
    """Every head of the alignment layer for one output (heads, rows, S), or None when the
    model has a single head (or none).

    The search keeps only the heads' average; teacher-forcing its output once more in eval mode
    gives the same weights head by head. `rows`: the output's attention rows (its tokens, plus
    one for </s> when it ended with it)."""
    heads = _teacher_forced(model, model.alignment_heads, src_ids, tgt_ids, rows, device)
    if heads is None or heads.size(1) < 2:
        return None
    return heads[0].float().cpu().numpy()  # (H, T, S)


def attention_layers(model: TranslationModel, src_ids: list[int], tgt_ids: list[int], rows: int,
                     device: torch.device | str) -> np.ndarray:
    """A Transformer's cross-attention, every decoder layer and head: (layers, heads, rows, S)."""
    layers = _teacher_forced(model, model.attention_heads, src_ids, tgt_ids, rows, device)
    return layers[0].float().cpu().numpy()


def _teacher_forced(model, attention, src_ids: list[int], tgt_ids: list[int], rows: int,
                    device: torch.device | str):
    """`attention(src, lengths, tgt_in)` of one output, in eval mode; the model's mode is kept.

    `tgt_ids` in reading order: a right_to_left model reads all of them reversed, and its rows
    (dim -2) are put back in reading order, the </s> row last."""
    src = torch.tensor([src_ids], device=device)  # (1, S)
    order, n = target_order(model), len(tgt_ids)
    # Reversed, the first rows wanted are the last ones read: a right_to_left model reads it all.
    forced = list(tgt_ids)[: rows - 1] if order == "left_to_right" else in_model_order(tgt_ids, order)
    tgt_in = torch.tensor([[BOS_ID] + forced], device=device)  # (1, T)
    with inference(model):
        weights = attention(src, torch.tensor([src.size(1)]), tgt_in)
    if weights is None or order == "left_to_right":
        return weights
    rows_in_reading_order = torch.tensor([*range(n - 1, -1, -1), n][:rows], device=weights.device)
    return weights.index_select(-2, rows_in_reading_order)
