"""The rules every search's outputs obey, greedy or beam: which tokens may be output at a step,
and how many steps a sentence gets."""

from __future__ import annotations

import torch
from torch import Tensor

from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID


def max_output_lengths(src_lengths: Tensor, ratio: float) -> Tensor:
    """ceil(ratio * source length) + 10 decoding steps per sentence, </s> included."""
    return torch.ceil(src_lengths.double() * ratio).long() + 10  # (B,)


def forbid_specials(log_probs: Tensor, step: int) -> Tensor:
    """<pad> and <s> are never outputs (training never scores them as targets), and </s> is not
    the first one: a non-empty source never gets an empty translation. An undertrained model
    often gives </s> alone the highest probability of any output, and beam search finds it."""
    log_probs[:, PAD_ID] = float("-inf")
    log_probs[:, BOS_ID] = float("-inf")
    if step == 0:
        log_probs[:, EOS_ID] = float("-inf")
    return log_probs
