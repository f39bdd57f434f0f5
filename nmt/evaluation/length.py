"""Does the output say everything? Length ratio and BLEU per source-length bucket.

BLEU's brevity penalty punishes a system whose output is shorter than the references, and a
search that drops content shows first on long sentences. So the evaluation reports, beside the
corpus BLEU, the length ratio (hypothesis words ÷ reference words, as sacrebleu counts them)
for sources of a few lengths: a ratio well under 1 on long sources says words were dropped.
"""

from __future__ import annotations

import sacrebleu

# Source lengths in characters (Chinese is written without spaces), the upper end of each
# bucket; the last bucket is open.
BUCKETS = (6, 10, 15)


def bucket_name(index: int) -> str:
    """'1-6', '7-10', '11-15', '16+' for BUCKETS (6, 10, 15)."""
    low = 1 if index == 0 else BUCKETS[index - 1] + 1
    return f"{low}-{BUCKETS[index]}" if index < len(BUCKETS) else f"{low}+"


def bucket_of(source: str) -> int:
    length = len("".join(source.split()))
    return next((i for i, top in enumerate(BUCKETS) if length <= top), len(BUCKETS))


def length_buckets(sources: list[str], hypotheses: list[str], references: list[str],
                   lowercase: bool = False) -> list[dict]:
    """Per source-length bucket: sentences, BLEU, hypothesis and reference lengths, ratio.

    Lengths are sacrebleu's own token counts, so the buckets' hyp_len and ref_len add up to the
    corpus score's.
    """
    grouped: dict[int, list[int]] = {}
    for index, source in enumerate(sources):
        grouped.setdefault(bucket_of(source), []).append(index)
    rows = []
    for bucket in sorted(grouped):
        members = grouped[bucket]
        score = sacrebleu.BLEU(lowercase=lowercase).corpus_score(
            [hypotheses[i] for i in members], [[references[i] for i in members]])
        rows.append({"bucket": bucket_name(bucket), "sentences": len(members),
                     "bleu": round(score.score, 2), "hyp_len": score.sys_len,
                     "ref_len": score.ref_len,
                     "ratio": round(score.sys_len / max(score.ref_len, 1), 4)})
    return rows


def format_buckets(rows: list[dict]) -> str:
    """'1-6: BLEU 40.1, ratio 0.98 (312) | 7-10: ...' for the terminal."""
    return " | ".join(f"{row['bucket']}: BLEU {row['bleu']:.1f}, ratio {row['ratio']:.3f} "
                      f"({row['sentences']})" for row in rows)
