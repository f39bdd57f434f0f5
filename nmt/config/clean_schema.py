"""The data.clean section of the config schema: the filters that drop (or mend) noisy pairs
before deduplication (nmt/data/filters.py). Like nmt/config/schema.py, each key's `#` comment
is its meaning in docs/config.md. Every filter is off by default (null or false)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional

from nmt.config.checks import positive, probability


@dataclass
class CleanConfig:
    """`data.clean`: filters for a noisy corpus (web crawls, subtitles), each counted in the
    manifest, with examples of what it dropped in the prepared folder's dropped/ files."""

    # Least share of Han characters among the letters of the Chinese side (the wrong language,
    # English on both sides, a copy of the English); null: off
    min_han_share: Optional[float] = field(default=None, metadata=probability)
    # Least share of Latin letters among the letters of the English side; null: off
    min_latin_share: Optional[float] = field(default=None, metadata=probability)
    # Drop a pair whose two sides are the same text (an untranslated copy)
    copies: bool = False
    # Chinese characters per English word: a pair outside [min, max] is truncated, padded or
    # misaligned (no word ratio: Chinese has no spaces); the least, null: off
    min_chars_per_word: Optional[float] = field(default=None, metadata=positive)
    max_chars_per_word: Optional[float] = field(default=None, metadata=positive)  # the most; null: off
    # Drop a pair whose sides both carry digits but not the same numbers
    numbers: bool = False
    # Markup, URLs and e-mail addresses: keep them, strip them from both sides, or drop the pair
    markup: Literal["keep", "strip", "drop"] = "keep"
    # Drop a pair with a character repeated more than this many times in a row; null: off
    max_repeat: Optional[int] = field(default=None, metadata=positive)
    # Dual conditional cross-entropy (nmt/decoding/dual_score.py): the file of scores that
    # scripts/dual_score.py wrote with a run trained on this corpus; null: off
    dual_scores: Optional[str] = None
    # the worst share of the pairs by those scores to drop (the misaligned ones); null: off
    dual_drop: Optional[float] = field(default=None, metadata=probability)
