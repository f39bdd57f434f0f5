"""Soft attention → hard links: which source tokens each English unit is aligned to.

A matrix `weights` (J, S) holds one row per English unit (target pieces already merged) and one
column per model source token; a row sums to 1 (it is a distribution over the source). Methods:

- `argmax`: each English unit to its most attended source token (the usual reading of
  attention as alignment; every English unit gets exactly one link);
- `threshold`: every (token, unit) whose weight is >= `threshold`: a unit may get none or several;
- `intersect` / `union` / `grow-diag-final-and`: the model has one matrix, read in two directions:
  target→source (argmax of each row) and source→target (argmax of each column: the English unit
  that attended most to this source token), then intersected, united, or symmetrized as
  statistical aligners symmetrize their two directional models.
"""

from __future__ import annotations

import numpy as np

from nmt.align.links import Link
from nmt.align.symmetrize import SYMMETRIZATIONS, symmetrize

METHODS = ("argmax", "threshold", "intersect", "union", "grow-diag-final-and")


def target_argmax(weights: np.ndarray) -> set[Link]:
    """(argmax source token, unit) for every unit with any weight."""
    return {(int(weights[j].argmax()), j) for j in range(weights.shape[0]) if weights[j].any()}


def source_argmax(weights: np.ndarray) -> set[Link]:
    """(token, argmax unit) for every source token that some unit attended to."""
    return {(k, int(weights[:, k].argmax())) for k in range(weights.shape[1]) if weights[:, k].any()}


def extract_links(weights: np.ndarray, method: str = "argmax", threshold: float = 0.5) -> set[Link]:
    """Links (source token k, English unit j) from a (J, S) matrix by `method` (see above)."""
    if weights.size == 0:
        return set()
    if method == "argmax":
        return target_argmax(weights)
    if method == "threshold":
        return {(int(k), int(j)) for j, k in zip(*np.nonzero(weights >= threshold))}
    if method in SYMMETRIZATIONS:
        return symmetrize(target_argmax(weights), source_argmax(weights), method)
    raise ValueError(f"unknown alignment method {method!r}; choose one of {METHODS}")
