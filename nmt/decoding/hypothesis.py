"""What a search returns for one sentence, and the GNMT length penalty that ranks it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, overload

import numpy as np

if TYPE_CHECKING:  # the engine decoder's path imports no torch (issue 54)
    from torch import Tensor


@dataclass
class Hypothesis:
    """One output sentence of the search."""

    tokens: list[int]  # target ids, without <s> and </s>
    score: float  # log_prob / length penalty: what hypotheses are ranked by
    log_prob: float  # sum of the token log-probabilities, </s> included when it was produced
    ended: bool = True  # False when it was cut at the maximum output length, without </s>
    # (T, S_real) float32 weights of each decoding step over the real source tokens:
    # T = len(tokens) + 1 when `ended` (the last row is the step that produced </s>), else
    # len(tokens). None when the model has no attention or the search did not keep it.
    attention: np.ndarray | None = None
    # Each rescoring model's term before its weight (nmt/decoding/rerank.py), when every one was
    # computed; make tune recombines them with other weights (`reweighed`).
    rescores: tuple[float, ...] = ()


@overload
def length_penalty(length: Tensor, alpha: float) -> Tensor: ...
@overload
def length_penalty(length: float, alpha: float) -> float: ...
def length_penalty(length: Tensor | float, alpha: float) -> Tensor | float:
    """GNMT (Wu et al., 2016): ((5 + length) / 6) ** alpha; alpha 0 gives 1, no normalization.

    `length` counts decoding steps, </s> included.
    """
    return ((5.0 + length) / 6.0) ** alpha


def reversed_hypothesis(hyp: Hypothesis) -> Hypothesis:
    """A right_to_left model's output in reading order: its tokens reversed, and their attention
    rows with them; the row of the step that produced </s>, when there is one, stays last."""
    n = len(hyp.tokens)
    attention = None if hyp.attention is None else np.concatenate(
        [hyp.attention[:n][::-1], hyp.attention[n:]])  # (T, S)
    return replace(hyp, tokens=hyp.tokens[::-1], attention=attention)
