"""Dual conditional cross-entropy (Junczys-Dowmunt, 2018): misaligned pairs found by the run's
own two directions.

A pair (x, y) is read by the forward model, H_f = −log p(y | x) / (|y| + 1), and by the reverse
(channel) model, H_r = −log p(x | y) / (|x| + 1), per token, </s> included. A good translation is
likely both ways, and both ways about as likely:

    score = |H_f − H_r| + (H_f + H_r) / 2        (lower is better)

A misaligned pair reads badly both ways; a pair one model merely finds odd disagrees. The worst
share of a corpus by this score is what `data.clean.dual_drop` drops (nmt/data/filters.py), from
the scores `scripts/dual_score.py` wrote with a run trained on that corpus (the default trains
both directions: its members and its channel member).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from nmt.data.batching import in_model_order
from nmt.decoding.rerank import candidate_log_probs


def dual_scores(forward: nn.Module, reverse: nn.Module, reverse_order: str,
                src_ids: list[list[int]], tgt_ids: list[list[int]], device: torch.device,
                batch_size: int = 64) -> np.ndarray:
    """(N, 3) float32: H_f, H_r and the dual score of each pair (ids without <s>/</s>)."""
    ended = [True] * len(src_ids)
    forward_log_probs = candidate_log_probs(forward, src_ids, tgt_ids, ended, device, batch_size)
    reverse_log_probs = candidate_log_probs(
        reverse, tgt_ids, [in_model_order(x, reverse_order) for x in src_ids], ended, device,
        batch_size)
    h_forward = -np.array(forward_log_probs) / (np.array([len(y) for y in tgt_ids]) + 1)  # (N,)
    h_reverse = -np.array(reverse_log_probs) / (np.array([len(x) for x in src_ids]) + 1)  # (N,)
    score = np.abs(h_forward - h_reverse) + (h_forward + h_reverse) / 2
    return np.stack([h_forward, h_reverse, score], axis=1).astype(np.float32)
