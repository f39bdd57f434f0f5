"""A train/dev/test split in which no English or Chinese sentence appears on two sides.

Tatoeba gives many English sentences several Chinese translations and the other way round. A
random split would put "Hi. / 你好。" in training and "Hi. / 嗨。" in test, and the model would be
tested on sentences it has seen. So pairs that share a sentence, directly or through a chain of
other pairs, form one connected component (union-find), and a component goes to one side whole.
"""

from __future__ import annotations

import logging
import random
from typing import Sequence

from nmt.errors import NMTError

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "test")


class _UnionFind:
    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        root = i
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[i] != root:  # path compression
            self.parent[i], i = root, self.parent[i]
        return root

    def union(self, i: int, j: int) -> None:
        self.parent[self.find(i)] = self.find(j)


def components(pairs: Sequence[tuple[str, str]]) -> list[list[int]]:
    """Groups of pair indices linked by a shared zh or en sentence; each group is sorted."""
    links = _UnionFind(len(pairs))
    first_seen: dict[tuple[int, str], int] = {}  # (side, sentence) → first pair index holding it
    for index, pair in enumerate(pairs):
        for side, sentence in enumerate(pair):
            key = (side, sentence.casefold())  # "Tom is here." and "tom is here." leak as well
            if key in first_seen:
                links.union(index, first_seen[key])
            else:
                first_seen[key] = index
    groups: dict[int, list[int]] = {}
    for index in range(len(pairs)):
        groups.setdefault(links.find(index), []).append(index)
    return list(groups.values())


def split_pairs(pairs: Sequence[tuple[str, str]], dev_size: int, test_size: int,
                seed: int) -> dict[str, list[int]]:
    """Indices of `pairs` (zh, en) for train, dev and test, each in corpus order.

    Components are shuffled with `seed`; each goes to whichever of test and dev is least full
    (as a share of its size) among those it fits in, else to train. A component never splits,
    so dev and test come out at or just under their sizes.
    """
    needed = 2 * (dev_size + test_size)  # keep at least half of the pairs for training
    if len(pairs) < needed:
        raise NMTError(
            f"only {len(pairs)} pairs are left after cleaning, too few for data.dev_size="
            f"{dev_size} and data.test_size={test_size} (needs at least {needed} pairs, half of "
            f"them for training); lower those sizes or use a larger corpus"
        )
    groups = components(pairs)
    random.Random(seed).shuffle(groups)
    targets = {"test": test_size, "dev": dev_size}
    chosen: dict[str, list[int]] = {name: [] for name in SPLITS}
    for group in groups:
        fits = [s for s, n in targets.items() if len(chosen[s]) + len(group) <= n]
        side = min(fits, key=lambda s: len(chosen[s]) / targets[s], default="train")
        chosen[side].extend(group)
    for name, target in targets.items():
        if not chosen[name]:
            raise NMTError(f"no {name} pairs: the groups of pairs sharing a sentence were too "
                           f"large for data.{name}_size={target}; raise it or use a larger corpus")
        if len(chosen[name]) < target:
            log.warning("%s has %d pairs, fewer than the %d asked for: the remaining groups of "
                        "pairs sharing a sentence were too large to fit", name,
                        len(chosen[name]), target)
    sizes = sorted((len(g) for g in groups), reverse=True)
    log.info("split %d pairs in %d groups (largest %s) into train %d, dev %d, test %d",
             len(pairs), len(groups), sizes[:3], *(len(chosen[s]) for s in SPLITS))
    return {name: sorted(indices) for name, indices in chosen.items()}
