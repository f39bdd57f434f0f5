"""The model's tokens onto the gold's units, by character offsets.

Whatever the model reads and writes (jieba words, single characters, sentencepiece pieces with a
"▁" word-start marker, BPE pieces with "@@"), its tokens and the gold units spell the same
sentence. Both sides are concatenated without spaces or markers and matched character by
character; a model token then *covers* every unit one of its characters falls in:

    jieba  汤姆|看来|感冒|了|。      → covers [0, 1] [2, 3] [4, 5] [6] [7]  (characters)
    pieces ▁Tom ▁seem s ▁to         → covers [0] [1] [1] [2]             (Moses tokens)

A source token's link goes to each character it covers; target pieces covering one English
token are merged (their attention rows averaged; a reverse model's attention over the English
pieces, a distribution, has their columns summed). Normalization may have changed a character
(`?` → `？`, full-width digits) or the case (`data.lowercase`): the match is case-blind, and
where the two spellings differ it falls back to difflib's alignment of the two strings.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import numpy as np

from nmt.align.links import Link

MARKERS = ("▁", "@@")  # sentencepiece word start; subword-nmt continuation


def _core(token: str) -> str:
    """The token's own characters: no marker, no spaces."""
    for marker in MARKERS:
        if token.startswith(marker):
            token = token[len(marker):]
        if token.endswith(marker):
            token = token[: -len(marker)]
    return "".join(token.split()).lower()


def _spell(tokens: list[str]) -> tuple[str, list[int]]:
    """The tokens' characters joined, and for each character the index of its token."""
    cores = [_core(t) for t in tokens]
    return "".join(cores), [k for k, core in enumerate(cores) for _ in core]


def coverage(tokens: list[str], units: list[str]) -> list[list[int]]:
    """For each token, the sorted indices of the units its characters fall in."""
    text, owner = _spell(tokens)
    unit_text, unit_owner = _spell(units)
    covered: list[set[int]] = [set() for _ in tokens]
    blocks: Sequence[tuple[str, int, int, int, int]]  # difflib's opcodes: (tag, a0, a1, b0, b1)
    if len(text) == len(unit_text):  # the usual case: the same characters, maybe normalized
        blocks = [("equal", 0, len(text), 0, len(text))]
    else:
        blocks = difflib.SequenceMatcher(None, text, unit_text, autojunk=False).get_opcodes()
    for tag, a0, a1, b0, b1 in blocks:
        if tag in ("equal", "replace") and a1 - a0 == b1 - b0:
            for a, b in zip(range(a0, a1), range(b0, b1)):
                covered[owner[a]].add(unit_owner[b])
        elif tag == "replace":  # spelled differently, lengths differ: all with all
            for a in range(a0, a1):
                covered[owner[a]].update(unit_owner[b0:b1])
    return [sorted(c) for c in covered]


def merge_rows(weights: np.ndarray, tgt_cover: list[list[int]], n_units: int) -> np.ndarray:
    """(T, S) attention of the model's target tokens → (J, S) for the J English units: a unit's
    row is the mean of the rows of the tokens that cover it; a unit no token covers gets zeros."""
    merged = np.zeros((n_units, weights.shape[1]), dtype=np.float32)  # (J, S)
    counts = np.zeros(n_units, dtype=np.float32)  # (J,)
    for t, units in enumerate(tgt_cover):
        for j in units:
            merged[j] += weights[t]
            counts[j] += 1
    return merged / np.maximum(counts, 1)[:, None]


def project_source(links: set[Link], src_cover: list[list[int]]) -> set[Link]:
    """Links (model source token k, unit j) → (every character k covers, j)."""
    return {(c, j) for k, j in links for c in src_cover[k]}


def sum_columns(weights: np.ndarray, cover: list[list[int]], n_units: int) -> np.ndarray:
    """(K, P) distributions over the model's P English tokens → (K, J) over the J English units:
    a unit's column is the sum of the columns of the tokens that cover it (the pieces of a word
    share its probability); a unit no token covers gets zeros."""
    merged = np.zeros((weights.shape[0], n_units), dtype=np.float32)  # (K, J)
    for p, units in enumerate(cover):
        for j in units:
            merged[:, j] += weights[:, p]
    return merged


def owners(cover: list[list[int]], n_units: int) -> list[list[int]]:
    """Per unit, the tokens that cover it: `coverage` read the other way."""
    tokens_of: list[list[int]] = [[] for _ in range(n_units)]
    for token, units in enumerate(cover):
        for unit in units:
            tokens_of[unit].append(token)
    return tokens_of


def unit_links_to_tokens(links: set[Link], src_tokens: list[str], src_units: list[str],
                         tgt_tokens: list[str], tgt_units: list[str]) -> set[Link]:
    """Links between units (Chinese character, English unit) → links between the tokens that
    cover them, e.g. the words a page shows: a token is linked where one of its units is."""
    src_of = owners(coverage(src_tokens, src_units), len(src_units))
    tgt_of = owners(coverage(tgt_tokens, tgt_units), len(tgt_units))
    return {(k, t) for i, j in links for k in src_of[i] for t in tgt_of[j]}
