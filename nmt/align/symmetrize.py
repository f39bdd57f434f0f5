"""grow-diag-final-and (Koehn et al., 2003; Moses' default): two directional alignments → one.

Start from the links both directions agree on (high precision), grow into neighbouring links
(diagonals included) found by either direction while they align a word not yet aligned, then
add the remaining links of each direction whose words are both still unaligned.
"""

from __future__ import annotations

from nmt.align.links import Link

SYMMETRIZATIONS = ("grow-diag-final-and", "intersect", "union")

_NEIGHBOURS = ((-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1))


def grow_diag_final_and(forward: set[Link], backward: set[Link]) -> set[Link]:
    """Links (i, j) of both alignments of one pair, in the same (Chinese, English) order."""
    union = forward | backward
    alignment = forward & backward
    src_aligned = {i for i, _ in alignment}
    tgt_aligned = {j for _, j in alignment}

    def add(i: int, j: int) -> None:
        alignment.add((i, j))
        src_aligned.add(i)
        tgt_aligned.add(j)

    grown = True
    while grown:  # grow-diag
        grown = False
        for i, j in sorted(alignment):
            for di, dj in _NEIGHBOURS:
                link = (i + di, j + dj)
                if (link in union and link not in alignment
                        and (link[0] not in src_aligned or link[1] not in tgt_aligned)):
                    add(*link)
                    grown = True
    for direction in (forward, backward):  # final-and
        for i, j in sorted(direction):
            if i not in src_aligned and j not in tgt_aligned:
                add(i, j)
    return alignment


def symmetrize(forward: set[Link], backward: set[Link], method: str = "grow-diag-final-and"
               ) -> set[Link]:
    """One of SYMMETRIZATIONS: grow-diag-final-and, or plain intersection / union."""
    if method == "intersect":
        return forward & backward
    if method == "union":
        return forward | backward
    if method == "grow-diag-final-and":
        return grow_diag_final_and(forward, backward)
    raise ValueError(f"unknown symmetrization {method!r}; choose one of {SYMMETRIZATIONS}")
