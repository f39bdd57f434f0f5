"""Two directions' soft alignments of one pair → one set of links.

The forward model (Chinese → English) teacher-forced on the pair gives, for each English unit j,
a distribution over the Chinese tokens k: p_f(k | j), one row of F. The reverse model (English →
Chinese) teacher-forced on the same pair gives, for each Chinese token k, a distribution over the
English units: p_r(j | k), one column of R once transposed into the forward's orientation. Both
are (J, K): rows English units, columns the Chinese tokens the models read. Methods:

- `grow-diag-final-and` (Koehn et al., 2003), `intersect`, `union`: of the two directions' own
  argmax links, each English unit to its best Chinese token (forward) and each Chinese token to
  its best English unit (reverse), as statistical aligners symmetrize their two directional
  models (and as Garg et al., 2019 and Chen et al., 2020 symmetrize two attention models);
- `product`: agreement (Liang et al., 2006, "Alignment by agreement"): a link's score is
  p_f(k | j) · p_r(j | k), the chance that both directions, each picking on its own, pick it;
- `mean`: (p_f(k | j) + p_r(j | k)) / 2, the softer vote.

`product` and `mean` link (k, j) where the score reaches the threshold (posterior decoding, as
Liang et al. decode), and wherever both directions' argmax agree: a mutual best pair is a link
however diffuse the two distributions are, so the score only adds links beside those. The
default thresholds put both on the same footing: both directions at one half (product 1/4,
mean 1/2).
"""

from __future__ import annotations

import numpy as np

from nmt.align.extract import source_argmax, target_argmax
from nmt.align.links import Link
from nmt.align.symmetrize import SYMMETRIZATIONS, symmetrize

AGREEMENTS = ("product", "mean")
BIDIRECTIONAL_METHODS = (*SYMMETRIZATIONS, *AGREEMENTS)
# The method `--weights bidirectional`, align_lines (nmt/align/translated.py) and the web page
# use when none is named: the best of the methods on the gold pairs (docs/alignment.md's table;
# its thresholds were set before measuring, not tuned on the gold pairs).
DEFAULT_BIDIRECTIONAL_METHOD = "mean"
# The least score that makes a link by itself, when --threshold is not given: for mean, half of
# each direction's normalized weight; for product, each direction at one half.
DEFAULT_THRESHOLDS = {"product": 0.25, "mean": 0.5}


def normalized(forward: np.ndarray, reverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F with each row a distribution, R with each column one (an all-zero row or column, a unit
    no token covers, stays zero)."""
    rows = forward.sum(axis=1, keepdims=True)  # (J, 1)
    columns = reverse.sum(axis=0, keepdims=True)  # (1, K)
    return (np.divide(forward, rows, out=np.zeros_like(forward), where=rows > 0),
            np.divide(reverse, columns, out=np.zeros_like(reverse), where=columns > 0))


def agreement_scores(forward: np.ndarray, reverse: np.ndarray, method: str) -> np.ndarray:
    """(J, K): p_f(k | j) · p_r(j | k) for `product`, their mean for `mean`."""
    forward, reverse = normalized(forward, reverse)
    if method == "product":
        return forward * reverse
    if method == "mean":
        return (forward + reverse) / 2
    raise ValueError(f"unknown agreement {method!r}; choose one of {AGREEMENTS}")


def combine(forward: np.ndarray, reverse: np.ndarray, method: str = DEFAULT_BIDIRECTIONAL_METHOD,
            threshold: float | None = None) -> set[Link]:
    """Links (Chinese token k, English unit j) from the forward (J, K) matrix, rows p_f(k | j),
    and the reverse (J, K), columns p_r(j | k), by `method` (see the module docstring);
    `threshold` for product and mean (default DEFAULT_THRESHOLDS)."""
    if forward.shape != reverse.shape:
        raise ValueError(f"the forward matrix is {forward.shape} but the reverse one {reverse.shape}")
    if forward.size == 0:
        return set()
    both = (target_argmax(forward), source_argmax(reverse))
    if method in SYMMETRIZATIONS:
        return symmetrize(*both, method)
    if method not in AGREEMENTS:
        raise ValueError(f"unknown bidirectional method {method!r}; choose one of "
                         f"{BIDIRECTIONAL_METHODS}")
    scores = agreement_scores(forward, reverse, method)  # (J, K)
    least = DEFAULT_THRESHOLDS[method] if threshold is None else threshold
    passing = {(int(k), int(j)) for j, k in zip(*np.nonzero(scores >= least))}
    return passing | (both[0] & both[1])
