"""A train/dev/test split in which no English or Chinese sentence appears on two sides.

Tatoeba gives many English sentences several Chinese translations and the other way round. A
random split would put "Hi. / 你好。" in training and "Hi. / 嗨。" in test, and the model would be
tested on sentences it has seen. So pairs that share a sentence, directly or through a chain of
other pairs, form one connected component, and a component goes to one side whole. Sentences
are compared by 64-bit hashes of their casefolded text ("Tom is here." and "tom is here." leak
as well), and the components come from scipy's sparse graph search over pairs and sentences,
so a corpus of millions of pairs splits in seconds and in a few arrays' memory.
"""

from __future__ import annotations

import logging
import random
from typing import Sequence

import numpy as np

from nmt.errors import NMTError

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


SPLIT_CODES = {"train": 0, "dev": 1, "test": 2}


def _hashes(pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
    from nmt.data.clean import sentence_hash

    return (np.array([sentence_hash(zh.casefold()) for zh, _ in pairs], np.uint64),
            np.array([sentence_hash(en.casefold()) for _, en in pairs], np.uint64))


def group_labels(zh: np.ndarray, en: np.ndarray) -> np.ndarray:
    """(N,) the component of each pair, numbered in order of each component's first pair."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(zh)
    zh_ids = np.unique(zh, return_inverse=True)[1].reshape(-1)  # (N,) sentence numbers
    en_ids = np.unique(en, return_inverse=True)[1].reshape(-1)
    nodes = n + int(zh_ids.max(initial=-1)) + 1 + int(en_ids.max(initial=-1)) + 1
    rows = np.concatenate([np.arange(n), np.arange(n)])  # pair → its two sentences
    cols = np.concatenate([n + zh_ids, n + int(zh_ids.max(initial=-1)) + 1 + en_ids])
    graph = coo_matrix((np.ones(2 * n, np.int8), (rows, cols)), shape=(nodes, nodes))
    labels = connected_components(graph, directed=False)[1][:n]
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)]


def components(pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
    """Groups of pair indices linked by a shared zh or en sentence; each group is sorted."""
    labels = group_labels(*_hashes(pairs))
    order = np.argsort(labels, kind="stable")
    bounds = np.cumsum(np.bincount(labels))[:-1]
    return [group.tolist() for group in np.split(order, bounds)] if len(pairs) else []


def split_pairs(pairs: Sequence[tuple[str, str]], dev_size: int, test_size: int,
                seed: int) -> dict[str, list[int]]:
    """Indices of `pairs` (zh, en) for train, dev and test, each in corpus order."""
    codes = split_hashed(*_hashes(pairs), {"test": test_size, "dev": dev_size}, seed)
    return {name: np.flatnonzero(codes == code).tolist() for name, code in SPLIT_CODES.items()}


def split_hashed(zh: np.ndarray, en: np.ndarray, sizes: dict[str, int], seed: int) -> np.ndarray:
    """(N,) uint8 split codes (SPLIT_CODES) of pairs given by their sentences' hashes.

    `sizes` names the splits to carve ({"test": 1500, "dev": 1000}; a split given as a file of
    its own is left out). Components are shuffled with `seed`; each goes to whichever of them
    is least full (as a share of its size) among those it fits in, else to train. A component
    never splits, so the carved splits come out at or just under their sizes.
    """
    needed = 2 * sum(sizes.values())  # keep at least half of the pairs for training
    if len(zh) < needed:
        asked = " and ".join(f"data.{name}_size={sizes[name]}" for name in ("dev", "test")
                            if name in sizes)
        raise NMTError(
            f"only {len(zh)} pairs are left after cleaning, too few for {asked} (needs at "
            f"least {needed} pairs, half of them for training); lower those sizes or use a "
            f"larger corpus")
    labels = group_labels(zh, en)
    group_sizes = np.bincount(labels, minlength=0).tolist()
    order = list(range(len(group_sizes)))
    random.Random(seed).shuffle(order)
    filled = dict.fromkeys(sizes, 0)
    side_of_group = np.zeros(len(group_sizes), np.uint8)  # train unless chosen
    for group in order:
        size = group_sizes[group]
        fits = [s for s, n in sizes.items() if filled[s] + size <= n]
        if not fits:
            if all(filled[s] == n for s, n in sizes.items()):
                break  # full: every other group trains
            continue
        side = min(fits, key=lambda s: filled[s] / sizes[s])
        filled[side] += size
        side_of_group[group] = SPLIT_CODES[side]
    for name, target in sizes.items():
        if not filled[name]:
            raise NMTError(f"no {name} pairs: the groups of pairs sharing a sentence were too "
                           f"large for data.{name}_size={target}; raise it or use a larger corpus")
        if filled[name] < target:
            log.warning("%s has %d pairs, fewer than the %d asked for: the remaining groups of "
                        "pairs sharing a sentence were too large to fit", name, filled[name], target)
    largest = sorted(group_sizes, reverse=True)[:3]
    codes = side_of_group[labels]
    log.info("split %d pairs in %d groups (largest %s) into train %d, dev %d, test %d",
             len(zh), len(group_sizes), largest,
             *(int((codes == c).sum()) for c in SPLIT_CODES.values()))
    return codes
