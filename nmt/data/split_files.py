"""The cleaned corpus, held in one shard of files, into the files of its splits: the leak check
against given dev/test sets, given sets moved into place, and every line routed to its split's
file (the prepare stage, nmt/data/prepare.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from tqdm import tqdm

from nmt.data.clean import SHARD_FILES, Shard
from nmt.data.prepared_folder import LANGS, PreparedData
from nmt.data.split import SPLIT_CODES

log = logging.getLogger(__name__)


def leak_check(shard: Shard, given: dict[str, Shard], counts: dict) -> np.ndarray:
    """Indices of the corpus pairs that share no sentence with a given dev or test set
    (casefolded, as the split compares them); the others are counted as leaked_into_<split>."""
    keep = np.ones(len(shard), bool)
    for split, held in given.items():
        leaked = keep & (np.isin(shard.zh_hashes, held.zh_hashes)
                         | np.isin(shard.en_hashes, held.en_hashes))
        counts[f"leaked_into_{split}"] = int(leaked.sum())
        if leaked.any():
            log.warning("dropped %d training pairs that share a sentence with the given %s set",
                        int(leaked.sum()), split)
        keep &= ~leaked
    return np.flatnonzero(keep)


def move_shard(shard: Shard, prepared: PreparedData, split: str) -> None:
    """A given split's shard files become that split's files."""
    for lang in LANGS:
        shard.path(lang).replace(prepared.text(split, lang))
        shard.path(f"tok.{lang}").replace(prepared.tokens(split, lang))
    shard.path("lineno").replace(prepared.source_lines(split))


def route_lines(shard: Shard, codes: np.ndarray, prepared: PreparedData, splits: list[str]) -> dict:
    """Each line of the shard's files into the file of its split (`codes`: SPLIT_CODES, 255 for
    none), one pass a line at a time; the pairs per split."""
    def output(name: str, split: str) -> Path:
        if name == "lineno":
            return prepared.source_lines(split)
        lang = name.removeprefix("tok.")
        return prepared.tokens(split, lang) if name.startswith("tok.") else prepared.text(split, lang)

    for name in SHARD_FILES:
        outputs = {SPLIT_CODES[s]: open(output(name, s), "w", encoding="utf-8", newline="\n")
                   for s in splits}
        try:
            with open(shard.path(name), encoding="utf-8", newline="\n") as lines:
                bar = tqdm(lines, total=len(codes), desc=f"split {name}", unit=" lines", disable=None)
                for code, line in zip(codes.tolist(), bar, strict=True):
                    if code in outputs:
                        outputs[code].write(line)
        finally:
            for file in outputs.values():
                file.close()
    return {split: int((codes == SPLIT_CODES[split]).sum()) for split in splits}
