"""How sure a BLEU score is: its 95% bootstrap interval, and the paired bootstrap test of two
systems on the same sentences (Koehn, 2004), both computed as sacrebleu computes them.

A score on 1,500 sentences moves by a point or more when other sentences are drawn, so a
difference between two runs counts only when it survives resampling: `paired_bootstrap` draws
the same sentence indices for both systems (sacrebleu's seed, SACREBLEU_SEED, default 12345),
and gives the difference of their scores, its 95% interval and sacrebleu's p-value.
"""

from __future__ import annotations

import numpy as np
import sacrebleu
from sacrebleu.significance import PairedTest, Result, estimate_ci

SAMPLES = 1000  # sacrebleu's default number of bootstrap resamples


def bleu_interval(hypotheses: list[str], references: list[str], lowercase: bool = False,
                  samples: int = SAMPLES) -> float:
    """The half-width of BLEU's 95% bootstrap interval (sacrebleu's `n_bootstrap`)."""
    score = sacrebleu.BLEU(lowercase=lowercase).corpus_score(hypotheses, [references],
                                                            n_bootstrap=samples)
    return float(score._ci)


def paired_bootstrap(references: list[str], baseline: list[str], system: list[str],
                     lowercase: bool = False, samples: int = SAMPLES) -> dict:
    """The paired bootstrap of `system` against `baseline` (two outputs of one split).

    Returns both BLEU scores, the difference (system − baseline), its 95% interval over the
    resamples, and sacrebleu's p-value: the chance of a difference this large if both systems
    were equally good.
    """
    if not len(references) == len(baseline) == len(system):
        raise ValueError(f"{len(references)} references, {len(baseline)} and {len(system)} "
                         f"hypotheses: compare two outputs of the same split")
    metric = sacrebleu.BLEU(lowercase=lowercase)
    test = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": metric},
                      references=[references], test_type="bs", n_samples=samples)
    signatures, scores = test()
    base_result, system_result = scores["BLEU"]
    # A metric's column holds Results (only the "System" column holds names), and the system
    # compared with the baseline has a p-value.
    assert isinstance(base_result, Result) and isinstance(system_result, Result)
    assert system_result.p_value is not None
    # The same resampled indices as the test drew, to bound the difference itself.
    rng = np.random.default_rng(test._seed)
    indices = rng.choice(len(system), size=(samples, len(system)), replace=True)  # (samples, N)
    differences = _resampled(metric, system, references, indices) - _resampled(
        metric, baseline, references, indices)
    low, high = np.percentile(differences, [2.5, 97.5])
    mean, _ = estimate_ci(differences)
    return {
        "baseline_bleu": base_result.score,
        "system_bleu": system_result.score,
        "difference": system_result.score - base_result.score,
        "difference_mean": float(mean),
        "interval": [float(low), float(high)],
        "p_value": float(system_result.p_value),
        "samples": samples,
        "signature": str(signatures["BLEU"]),
    }


def _resampled(metric: sacrebleu.BLEU, hypotheses: list[str], references: list[str],
               indices: np.ndarray) -> np.ndarray:
    """BLEU of each resample (a row of `indices`), from per-sentence n-gram statistics."""
    stats = np.array(metric._extract_corpus_statistics(hypotheses, [references]),
                     dtype="float32")  # (N, 2 + 2 * max_ngram_order)
    return np.array([metric._compute_score_from_stats(stats[row].sum(0)).score
                     for row in indices])
