"""Precision, recall and alignment error rate (Och & Ney, 2003), over a whole corpus.

For predicted links A, Sure links S and Possible links P (S ⊆ P):

    precision = |A ∩ P| / |A|      recall = |A ∩ S| / |S|
    AER       = 1 − (|A ∩ S| + |A ∩ P|) / (|A| + |S|)

Counts are summed over all pairs before dividing (corpus level, as the gold README and the
literature compute it), so a long sentence weighs more than a short one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from nmt.align.links import Link


@dataclass
class AlignmentScores:
    precision: float
    recall: float
    aer: float
    pairs: int
    predicted: int  # |A|, summed over pairs
    sure: int  # |S|
    possible: int  # |P|

    def to_dict(self) -> dict:
        return asdict(self)


def score_alignments(predicted: list[set[Link]], sure: list[set[Link]],
                     possible: list[set[Link]]) -> AlignmentScores:
    """Corpus-level scores; Possible is taken as P ∪ S, so a gold file listing only the extra
    possible links scores the same. An empty prediction has precision 0 and AER 1 (if S is not
    empty); an empty prediction against an empty gold set is perfect (AER 0)."""
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(f"{len(predicted)} predicted alignments for {len(sure)} gold ones")
    a_total = s_total = p_total = a_and_s = a_and_p = 0
    for a, s, p in zip(predicted, sure, possible):
        p = p | s
        a_total, s_total, p_total = a_total + len(a), s_total + len(s), p_total + len(p)
        a_and_s += len(a & s)
        a_and_p += len(a & p)
    precision = a_and_p / a_total if a_total else 0.0
    recall = a_and_s / s_total if s_total else (1.0 if not a_total else 0.0)
    aer = 1.0 - (a_and_s + a_and_p) / (a_total + s_total) if a_total + s_total else 0.0
    return AlignmentScores(precision, recall, aer, len(predicted), a_total, s_total, p_total)
