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


@dataclass
class PairedBootstrap:
    difference: float  # AER(B) − AER(A) on the whole set, in AER units: > 0 when A is better
    low: float  # the 2.5th and 97.5th percentiles of that difference over the resamples
    high: float
    a_worse_or_equal: float  # share of resamples where A's AER is not below B's


def paired_bootstrap(a: list[set[Link]], b: list[set[Link]], sure: list[set[Link]],
                     possible: list[set[Link]], resamples: int = 2000,
                     seed: int = 0) -> PairedBootstrap:
    """Is A's lower AER more than the luck of which pairs were annotated? Resample the pairs with
    replacement (the same pairs for both aligners: paired, Koehn 2004 for BLEU) and score both on
    every resample, at corpus level as score_alignments does."""
    import random

    if not len(a) == len(b) == len(sure) == len(possible):
        raise ValueError(f"{len(a)} and {len(b)} alignments for {len(sure)} gold ones")
    rng = random.Random(seed)
    differences = []
    for _ in range(resamples):
        picked = [rng.randrange(len(sure)) for _ in sure]
        score = [score_alignments([x[i] for i in picked], [sure[i] for i in picked],
                                  [possible[i] for i in picked]).aer for x in (a, b)]
        differences.append(score[1] - score[0])
    differences.sort()
    whole = score_alignments(b, sure, possible).aer - score_alignments(a, sure, possible).aer
    return PairedBootstrap(whole, differences[int(0.025 * resamples)],
                           differences[min(resamples - 1, int(0.975 * resamples))],
                           sum(d <= 0 for d in differences) / resamples)
