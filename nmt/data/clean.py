"""The first pass of prepare, streaming: read → normalize → drop duplicate pairs → segment and
tokenize (worker processes) → length filter → a shard of plain files, written as pairs come.

Memory stays flat in the corpus size: a pair is dropped as a duplicate by an 8-byte hash of its
normalized sides (a set of integers, not of strings), and of every kept pair only two 8-byte
hashes stay in memory, of its casefolded Chinese and English sentences, which the leak-free split
(nmt/data/split.py) and the leak check against given dev/test sets read.
"""

from __future__ import annotations

import hashlib
import itertools
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from nmt.config.schema import DataConfig
from nmt.config.sources import Source, Sources
from nmt.data.corpus import Pair
from nmt.data.filters import PairFilter, read_dual_scores
from nmt.errors import NMTError
from nmt.data.normalize import normalize_en, normalize_zh
from nmt.data.sources import read_source

CHUNK = 2000  # pairs per tokenization task
SHARD_FILES = ("zh", "en", "tok.zh", "tok.en", "lineno")  # text, tokens, corpus line numbers


def sentence_hash(text: str) -> int:
    """A stable 64-bit hash (Python's hash() changes between processes)."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@dataclass
class Shard:
    """Cleaned pairs in files of one line each (folder/<name>), and their sentence hashes."""

    folder: Path
    zh_hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))  # (N,)
    en_hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))  # (N,)

    def path(self, name: str) -> Path:
        return self.folder / name

    def __len__(self) -> int:
        return len(self.zh_hashes)


def clean_pairs(sources: Sources, data: DataConfig, folder: Path, counts: dict,
                checksums: dict[str, str], dedup: bool = True, length_filter: bool = True) -> Shard:
    """Every good pair of `sources`, cleaned, tokenized and written to a Shard in `folder`.

    `dedup` and `length_filter` (and data.clean's filters) are off for a given test set, which
    is scored whole. `counts` gets the lines read and skipped, pairs read, beyond
    data.max_pairs, what each data.clean filter dropped (and `pair_filter` its examples),
    duplicates and too long.
    """
    from nmt.data.parallel import tokenize_chunks  # jieba, Moses and a pool: not for cached runs

    folder.mkdir(parents=True, exist_ok=True)
    skipped: Counter = Counter()
    several = len(sources) > 1
    pairs = _limited(_read_all(sources, skipped, checksums, several), data.max_pairs if dedup
                     else None, counts)
    pair_filter = make_filter(data) if dedup else None
    unique = _normalize_dedup(pairs, data, counts, dedup, pair_filter)
    chunks = _chunks(unique)
    zh_hashes, en_hashes = array("Q"), array("Q")
    files = {name: open(folder / name, "w", encoding="utf-8", newline="\n") for name in SHARD_FILES}
    too_long = 0
    try:
        holder: list[list[tuple[Pair, str]]] = []
        for zh_tokens, en_tokens in tokenize_chunks(_sources_of(chunks, holder), data):
            for (pair, line), zh, en in zip(holder.pop(0), zh_tokens, en_tokens, strict=True):
                if length_filter and not (_fits(zh, data) and _fits(en, data)):
                    too_long += 1
                    continue
                for name, text in zip(SHARD_FILES, (pair.zh, pair.en, zh, en, line)):
                    files[name].write(text + "\n")
                zh_hashes.append(sentence_hash(pair.zh.casefold()))
                en_hashes.append(sentence_hash(pair.en.casefold()))
    finally:
        for file in files.values():
            file.close()
    counts["skipped"] = dict(sorted((counts.get("skipped", {}) | skipped).items()))
    counts["lines_read"] = counts.get("lines_read", 0) + counts["pairs_read"] + sum(skipped.values())
    counts["filtered_length"] = too_long
    counts["pairs_kept"] = len(zh_hashes)
    if pair_filter is not None and pair_filter.active:
        if pair_filter.dual is not None:  # the scores met none, or only some, of these lines
            pair_filter.dual.check(", ".join(map(str, sources.files())))
        counts["clean"] = pair_filter.counts()
        write_examples(folder / "dropped", pair_filter)
    return Shard(folder, np.frombuffer(zh_hashes, np.uint64).copy(),
                 np.frombuffer(en_hashes, np.uint64).copy())


def _read_all(sources: Iterable[Source], skipped: Counter, checksums: dict,
              several: bool) -> Iterator[tuple[Pair, str]]:
    """(pair, its line number as written to .lineno: "k:line" when there are several corpora)."""
    for k, source in enumerate(sources, start=1):
        for pair in read_source(source, skipped, checksums):
            yield pair, f"{k}:{pair.line}" if several else str(pair.line)


def _limited(pairs: Iterator, max_pairs: int | None, counts: dict) -> Iterator:
    """The first `max_pairs` pairs; the rest are read too (their count goes into the manifest)."""
    counts["pairs_read"] = counts["beyond_max_pairs"] = 0
    for item in pairs:
        counts["pairs_read"] += 1
        if max_pairs is not None and counts["pairs_read"] > max_pairs:
            counts["beyond_max_pairs"] += 1
            continue
        yield item


def _normalize_dedup(pairs: Iterator, data: DataConfig, counts: dict, dedup: bool,
                     pair_filter: PairFilter | None = None) -> Iterator[tuple[Pair, str]]:
    """Normalized pairs that pass data.clean's filters, each distinct (zh, en) once (with
    `dedup`), in first-seen order."""
    seen: set[int] = set()
    counts["duplicates"] = 0
    for pair, line in pairs:
        zh, en = normalize_zh(pair.zh, data.traditional_to_simplified), normalize_en(pair.en, data.lowercase)
        if pair_filter is not None and pair_filter.active:
            kept = pair_filter(zh, en, line)
            if kept is None:
                continue
            zh, en = kept
        clean = Pair(zh, en, pair.line)
        if dedup:
            key = sentence_hash(f"{clean.zh}\t{clean.en}")
            if key in seen:
                counts["duplicates"] += 1
                continue
            seen.add(key)
        yield clean, line


def make_filter(data: DataConfig) -> PairFilter:
    """data.clean's filters, with the corpus lines its dual scores drop."""
    clean = data.clean
    if (clean.dual_scores is None) != (clean.dual_drop is None):
        raise NMTError("data.clean.dual_scores and data.clean.dual_drop go together: the scores "
                       "of scripts/dual_score.py and the worst share of them to drop")
    dual = None
    if clean.dual_scores is not None and clean.dual_drop is not None:
        dual = read_dual_scores(clean.dual_scores, clean.dual_drop)
    return PairFilter(clean, dual)


def write_examples(folder: Path, pair_filter: PairFilter) -> None:
    """dropped/<filter>.tsv: the first pairs each filter dropped (line number, Chinese, English)."""
    folder.mkdir(parents=True, exist_ok=True)
    for reason, examples in pair_filter.examples.items():
        with open(folder / f"{reason}.tsv", "w", encoding="utf-8", newline="\n") as file:
            for line, zh, en in examples:
                file.write(f"{line}\t{zh}\t{en}\n")


def _chunks(pairs: Iterator) -> Iterator[list]:
    while chunk := list(itertools.islice(pairs, CHUNK)):
        yield chunk


def _sources_of(chunks: Iterator[list], holder: list) -> Iterator[tuple[list[str], list[str]]]:
    """The sentences of each chunk for the tokenizer; the chunk itself waits in `holder` (in
    order) until its tokens come back."""
    for chunk in chunks:
        holder.append(chunk)
        yield [pair.zh for pair, _ in chunk], [pair.en for pair, _ in chunk]


def _fits(tokens: str, data: DataConfig) -> bool:
    return data.min_length <= len(tokens.split()) <= data.max_length
