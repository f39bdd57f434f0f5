"""Filters for noisy corpora (`data.clean`): each one looks at a normalized pair and says
whether to drop it, and prepare counts what each one dropped, with examples (nothing is lost
silently).

The filters are of the surface of a pair, cheap enough to stream a corpus of millions:
- markup: HTML tags, URLs and e-mail addresses, stripped from both sides or the pair dropped;
- repeat: a character repeated many times in a row;
- script: the share of Han characters among the Chinese side's letters, and of Latin letters
  among the English side's (the wrong language, English on both sides, a copy of either side);
- copies: both sides the same text;
- numbers: both sides carry digits, but not the same numbers;
- length: Chinese characters per English word (Chinese has no spaces to count words by);
- dual: the worst share by dual conditional cross-entropy (nmt/data/dual_score.py): the
  misaligned pairs a surface does not show, found by a run's two directions.
They run in that order, the most specific first; the first that fires names the reason, so a
pair is counted once.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from nmt.config.clean_schema import CleanConfig
from nmt.errors import NMTError

MARKUP = re.compile(r"<[^<>]{1,200}>|&[a-z]{2,8};|https?://\S+|www\.\S+|\S+@\S+\.[a-z]{2,}",
                    re.IGNORECASE)
DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
EXAMPLES = 20  # dropped pairs kept per filter, for the prepared folder's dropped/ files
MAKE_SCORES = ("train a run on this corpus with training.channel_members: 1 and run "
               "`python scripts/dual_score.py CONFIG` (it writes runs/<name>/dual_scores.tsv)")

log = logging.getLogger(__name__)


def is_han(char: str) -> bool:
    return "\u4e00" <= char <= "\u9fff" or "\u3400" <= char <= "\u4dbf" or "\uf900" <= char <= "\ufaff"


def letters(text: str) -> list[str]:
    """The characters of `text` that are letters of some script (Unicode category L*)."""
    return [char for char in text if unicodedata.category(char).startswith("L")]


def han_share(text: str) -> float:
    found = letters(text)
    return sum(map(is_han, found)) / len(found) if found else 1.0


def latin_share(text: str) -> float:
    found = letters(text)
    return sum(char.isascii() for char in found) / len(found) if found else 1.0


def chars_per_word(zh: str, en: str) -> float:
    """Han characters (or letters, when there are none) of the Chinese side per English word."""
    chars = sum(map(is_han, zh)) or len(letters(zh))
    return chars / max(1, len(en.split()))


def numbers(text: str) -> set[str]:
    return {match.replace(",", "") for match in DIGITS.findall(text)}


def longest_repeat(text: str) -> int:
    longest, run, previous = 0, 0, None
    for char in text:
        run = run + 1 if char == previous else 1
        previous = char
        longest = max(longest, run)
    return longest


def strip_markup(text: str) -> str:
    return " ".join(MARKUP.sub(" ", text).split())


def reason_to_drop(zh: str, en: str, clean: CleanConfig) -> str | None:
    """The first filter that drops the pair (zh, en), or None to keep it."""
    if clean.markup == "drop" and (MARKUP.search(zh) or MARKUP.search(en)):
        return "markup"
    if clean.max_repeat is not None and max(longest_repeat(zh), longest_repeat(en)) > clean.max_repeat:
        return "repeat"
    if clean.min_han_share is not None and han_share(zh) < clean.min_han_share:
        return "han_share"
    if clean.min_latin_share is not None and latin_share(en) < clean.min_latin_share:
        return "latin_share"
    if clean.copies and zh.casefold().replace(" ", "") == en.casefold().replace(" ", ""):
        return "copies"
    if clean.numbers and numbers(zh) and numbers(en) and numbers(zh) != numbers(en):
        return "numbers"
    ratio = chars_per_word(zh, en)
    if clean.min_chars_per_word is not None and ratio < clean.min_chars_per_word:
        return "chars_per_word"
    if clean.max_chars_per_word is not None and ratio > clean.max_chars_per_word:
        return "chars_per_word"
    return None


@dataclass
class PairFilter:
    """data.clean applied to a stream of pairs: what each filter dropped, and examples."""

    clean: CleanConfig
    # data.clean.dual_scores: the corpus lines its worst dual_drop share drops
    dual: DualScores | None = None
    dropped: Counter = field(default_factory=Counter)
    stripped: int = 0  # pairs whose markup was stripped (markup: strip)
    examples: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)

    @functools.cached_property
    def active(self) -> bool:  # asked for every pair: compared once
        return self.clean != CleanConfig()

    def __call__(self, zh: str, en: str, line: str) -> tuple[str, str] | None:
        """The pair as kept (markup stripped), or None when a filter drops it; `line` is its
        corpus line as prepare numbers it ("7", or "2:7" for the second of several corpora)."""
        if self.dual is not None:
            self.dual.see(line)
        if self.clean.markup == "strip" and (MARKUP.search(zh) or MARKUP.search(en)):
            zh, en = strip_markup(zh), strip_markup(en)
            self.stripped += 1
        reason = "markup" if not (zh and en) else reason_to_drop(zh, en, self.clean)
        if reason is None and self.dual is not None and line in self.dual.worst:
            reason = "dual"
        if reason is None:
            return zh, en
        self.dropped[reason] += 1
        kept = self.examples.setdefault(reason, [])
        if len(kept) < EXAMPLES:
            kept.append((line, zh, en))
        return None

    def counts(self) -> dict:
        return {"dropped": dict(sorted(self.dropped.items())), "markup_stripped": self.stripped}


def line_hash(line: str) -> int:
    """A stable 64-bit hash of a corpus line's number ("7", "2:7")."""
    return int.from_bytes(hashlib.blake2b(line.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass
class DualScores:
    """A file of dual scores (data.clean.dual_scores) as cleaning reads it: the lines to drop,
    and how many of the lines it scores are lines of the corpus being cleaned.

    Scores and corpus meet by line number only (scripts/dual_score.py writes each training
    pair's corpus line, "k:line" with several corpora): scores of another corpus, or of other
    corpora, name lines this one does not have, or other sentences. `see` counts the scored
    lines met among the corpus lines read; `check`, once all are read, says when some or all of
    them were not met. The scored lines are kept as 8-byte hashes, not strings."""

    path: str
    worst: set[str]  # the corpus lines of the worst dual_drop share: dropped
    scored: np.ndarray  # (N,) uint64, sorted, unique: line_hash of every line the file scores
    met: int = 0  # scored lines seen among the corpus lines read so far

    def see(self, line: str) -> None:
        key = np.uint64(line_hash(line))
        at = int(np.searchsorted(self.scored, key))
        if at < len(self.scored) and self.scored[at] == key:
            self.met += 1

    def check(self, corpus: str) -> None:
        """An NMTError when no scored line is a line of `corpus` (every line read seen), a
        warning with the count when some are not."""
        if self.met == 0:
            raise NMTError(f"data.clean.dual_scores: none of the {len(self.scored):,} lines scored "
                           f"in {self.path} is a line of the corpus {corpus} (scores and corpus "
                           f"meet by line number): the scores are of another corpus. Score this "
                           f"one: {MAKE_SCORES}")
        if self.met < len(self.scored):
            log.warning("data.clean.dual_scores: %s of the %s lines scored in %s are not lines of "
                        "the corpus %s read here (scores and corpus meet by line number): their "
                        "scores drop nothing. If the scores are of another corpus, %s",
                        f"{len(self.scored) - self.met:,}", f"{len(self.scored):,}", self.path,
                        corpus, MAKE_SCORES)


def read_dual_scores(path: str, drop: float) -> DualScores:
    """The corpus lines (as prepare numbers them) of the worst `drop` share by dual score, and
    every line scored, from the TSV scripts/dual_score.py wrote (nmt/decoding/dual_score.py):
    line <TAB> H_f <TAB> H_r <TAB> score."""
    lines, scores = [], []
    try:
        with open(path, encoding="utf-8") as file:
            for number, row in enumerate(file, 1):
                if number == 1 and row.startswith("line\t"):
                    continue  # the header
                fields = row.rstrip("\n").split("\t")
                lines.append(fields[0])
                scores.append(float(fields[3]))
    except (OSError, ValueError, IndexError) as error:
        raise NMTError(f"data.clean.dual_scores: {path} is not a file of dual scores "
                       f"({error}); write it with scripts/dual_score.py") from None
    if not scores:
        raise NMTError(f"data.clean.dual_scores: {path} holds no scores")
    worst = np.argsort(-np.array(scores), kind="stable")[: int(round(drop * len(scores)))]
    hashes = np.fromiter((line_hash(line) for line in lines), np.uint64, len(lines))  # (N,)
    return DualScores(path, {lines[i] for i in worst}, np.unique(hashes))  # (N,) sorted
