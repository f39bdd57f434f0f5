"""Guided alignment (Garg et al., 2019; OpenNMT-py's `lambda_align`): an auxiliary loss that
pulls the attention toward a statistical aligner's links of the training pairs.

With `training.guided_alignment` = λ > 0, eflomal aligns the prepared training pairs once, in the
model's own tokens (their ids: what the model reads, <unk> included), both directions symmetrized
with grow-diag-final-and. The links of every prepared train pair (all of them, before
training.max_length, in reading order) are kept in the prepared folder as flat arrays:

    guided.links.npy    int16 (n, 2): (target position, source position) of every link
    guided.offsets.npy  int64 (N + 1,): pair i's links are links[offsets[i]:offsets[i + 1]]

so every run, member and rank of a machine reads (memory-maps) the same file, and a resumed run
trains toward the same links (eflomal's sampler is seeded from the clock). A file lock in the
folder lets the first process align while the others wait and then read. With distilled
targets (training.distill_from) the pairs are the run's own: their links are kept in
runs/<name>/guided_links.txt, as before.

For each target token y_t with links to source tokens L_t, the loss adds

    λ · −Σ_{s ∈ L_t} (1/|L_t|) · log a_ts

to the summed cross-entropy (tokens without a link add nothing), so it is normalized by the same
target-token count as the translation loss.
"""

from __future__ import annotations

import fcntl
import functools
import logging
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from nmt.align.links import Link, format_links, parse_links
from nmt.align.statistical import eflomal_links
from nmt.align.symmetrize import grow_diag_final_and
from nmt.data.batching import Batch, Example
from nmt.data.token_arrays import PairArrays, TokenArrays
from nmt.io import atomic_write, atomic_write_lines, read_lines

log = logging.getLogger(__name__)

LINKS, OFFSETS, LOCK = "guided.links.npy", "guided.offsets.npy", "guided.lock"
MAX_POSITION = np.iinfo(np.int16).max  # a link past it lies outside any batch that fits in memory


def eflomal_training_links(examples: list[Example]) -> list[set[Link]]:
    """Symmetrized eflomal links (source position, target position) of every example."""
    forward, backward = eflomal_links([[str(i) for i in ex.src] for ex in examples],
                                      [[str(i) for i in ex.tgt] for ex in examples])
    return [grow_diag_final_and(f, b) for f, b in zip(forward, backward)]


def flat_links(links: list[set[Link]]) -> tuple[np.ndarray, np.ndarray]:
    """Sets of (source, target) links → (n, 2) int16 rows of (t, s) and (N + 1,) int64 offsets."""
    offsets = np.zeros(len(links) + 1, dtype=np.int64)  # (N + 1,)
    offsets[1:] = np.cumsum([len(pairs) for pairs in links])
    flat = np.empty((int(offsets[-1]), 2), dtype=np.int64)  # (n, 2), filled a pair at a time
    for i, pairs in enumerate(links):
        if pairs:
            flat[offsets[i]:offsets[i + 1]] = sorted((t, s) for s, t in pairs)
    inside = (flat <= MAX_POSITION).all(1)  # (n,)
    if not inside.all():  # drop them, and count each pair's links again
        pair_of = np.repeat(np.arange(len(links)), np.diff(offsets))  # (n,)
        offsets[1:] = np.cumsum(np.bincount(pair_of[inside], minlength=len(links)))
        flat = flat[inside]
    return flat.astype(np.int16), offsets


def align_prepared(src: TokenArrays, tgt: TokenArrays) -> tuple[np.ndarray, np.ndarray]:
    """Flat links of every prepared pair; an empty pair (eflomal needs both sides) has none."""
    both = np.flatnonzero((src.lengths > 0) & (tgt.lengths > 0))
    log.info("guided alignment: eflomal aligns the %d prepared training pairs", len(both))
    aligned = eflomal_training_links([Example(src.ids(i), tgt.ids(i)) for i in both.tolist()])
    links: list[set[Link]] = [set() for _ in range(len(src))]
    for i, pairs in zip(both.tolist(), aligned):
        links[i] = pairs
    return flat_links(links)


def _read(folder: Path, pairs: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The kept links, memory-mapped, if they are whole and for `pairs` pairs; else None."""
    if not (folder / LINKS).is_file() or not (folder / OFFSETS).is_file():
        return None
    try:
        links = np.load(folder / LINKS, mmap_mode="r", allow_pickle=False)
        offsets = np.load(folder / OFFSETS, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        log.warning("%s: damaged (%s): aligning again", folder / LINKS, error)
        return None
    if (links.ndim != 2 or links.shape[1] != 2 or len(offsets) != pairs + 1
            or offsets[0] != 0 or offsets[-1] != len(links)):
        log.warning("%s holds links of %d pairs for %d training pairs: aligning again",
                    folder / LINKS, len(offsets) - 1, pairs)
        return None
    return links, offsets


def load_or_align(folder: Path, src: TokenArrays, tgt: TokenArrays) -> tuple[np.ndarray, np.ndarray]:
    """The links of the prepared train pairs kept in `folder`, else aligned now and kept there.

    Processes that start at once (members, torchrun ranks) take the folder's lock in turn: the
    first aligns, the others wait for it and then read what it wrote.
    """
    kept = _read(folder, len(src))
    if kept is not None:
        return kept
    with open(folder / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        kept = _read(folder, len(src))
        if kept is None:
            links, offsets = align_prepared(src, tgt)
            for name, array in ((LINKS, links), (OFFSETS, offsets)):  # offsets last: they
                atomic_write(folder / name, functools.partial(_save, array=array))  # end at the links
            kept = _read(folder, len(src))
            assert kept is not None  # what was just written is whole and for these pairs
    return kept


def _save(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as file:  # not np.save: it would add ".npy" to the temporary name
        np.lib.format.write_array(file, array)


def load_or_align_text(examples: list[Example], path: Path) -> list[set[Link]]:
    """The links kept at `path` if they are for as many pairs, else aligned now and kept there."""
    if path.is_file():
        lines = read_lines(path)
        if len(lines) == len(examples):
            return [parse_links(line, str(path)) for line in lines]
        log.warning("%s holds %d alignments for %d training pairs: aligning again", path,
                    len(lines), len(examples))
    log.info("guided alignment: eflomal aligns the %d training pairs", len(examples))
    links = eflomal_training_links(examples)
    atomic_write_lines(path, [format_links(x) for x in links])
    return links


class GuidedAlignment:
    """λ and flat links: pair `index[i]`'s are links[offsets[index[i]]:offsets[index[i] + 1]]
    for position i of the training dataset (index None: the same position)."""

    def __init__(self, weight: float, links: np.ndarray, offsets: np.ndarray,
                 index: np.ndarray | None = None, flip_lengths: np.ndarray | None = None):
        self.weight, self.links, self.offsets, self.index = weight, links, offsets, index
        # A right_to_left model reads targets reversed: its position t is reading position n-1-t.
        self.flip_lengths = flip_lengths  # (M,) target lengths by dataset position, or None

    @classmethod
    def from_links(cls, weight: float, links: list[set[Link]]) -> "GuidedAlignment":
        """From (source, target) link sets, one per example, in the examples' target order."""
        return cls(weight, *flat_links(links))

    def targets(self, batch: Batch) -> Tensor:
        """(B, T, S): row t of pair b spreads 1 evenly over the source tokens y_t is linked to."""
        batch_size, steps = batch.tgt_in.shape
        positions = np.asarray(batch.indices, dtype=np.int64)  # (B,)
        pairs = positions if self.index is None else self.index[positions]  # (B,)
        starts, counts = self.offsets[pairs], self.offsets[pairs + 1] - self.offsets[pairs]  # (B,)
        # The links of all B pairs in one gather: row b's slice starts[b] .. starts[b] + counts[b].
        rows = np.repeat(np.arange(batch_size), counts)  # (N,)
        within = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)  # (N,)
        linked = np.asarray(self.links[np.repeat(starts, counts) + within], dtype=np.int64)  # (N, 2)
        t, s = linked[:, 0], linked[:, 1]  # (N,), (N,)
        if self.flip_lengths is not None:
            t = self.flip_lengths[positions][rows] - 1 - t
        t_idx, s_idx, b_idx = torch.from_numpy(t), torch.from_numpy(s), torch.from_numpy(rows)
        target = torch.zeros(batch_size, steps, batch.src.size(1))  # (B, T, S)
        inside = (t_idx >= 0) & (t_idx < steps) & (s_idx < batch.src.size(1))
        target[b_idx[inside], t_idx[inside], s_idx[inside]] = 1.0
        return target / target.sum(-1, keepdim=True).clamp(min=1.0)

    def loss(self, batch: Batch, weights: Tensor | None) -> Tensor:
        """λ × the summed cross-entropy between the link rows and the attention (B, T, S)."""
        if weights is None:
            raise ValueError("guided alignment needs a model that returns attention weights")
        target = self.targets(batch).to(weights.device)
        log_attention = torch.log(weights.float().clamp(min=1e-9))
        return self.weight * -(target * log_attention).sum()


def for_training(weight: float, examples, run_dir: Path, distributed) -> GuidedAlignment:
    """The guide of the training pairs on every rank.

    PairArrays: the prepared folder's links; the main rank aligns or reads them, then, after a
    barrier (bounded by the process group's timeout, as prepare_everywhere's), the other ranks
    read them (on another machine whose disk is not shared, the lock lets one of them align).
    A list of Example (distilled targets): rank 0 aligns or reads runs/<name>/guided_links.txt
    and broadcasts them.
    """
    if not isinstance(examples, PairArrays):
        sets = load_or_align_text(examples, run_dir / "guided_links.txt") if distributed.is_main else None
        return GuidedAlignment.from_links(weight, distributed.broadcast(sets))
    folder = examples.src.prefix.parent  # the prepared folder, where train.zh.ids.npy lies
    # The links are kept zh → en; a reverse model (English source) reads them transposed.
    zh, en = (examples.tgt, examples.src) if examples.reverse else (examples.src, examples.tgt)
    kept = load_or_align(folder, zh, en) if distributed.is_main else None
    distributed.barrier()
    if kept is None:
        kept = load_or_align(folder, zh, en)
    links, offsets = kept
    if examples.reverse:  # (English position, Chinese position): the Chinese is now the target
        links = np.ascontiguousarray(links[:, ::-1])
    flip = examples.tgt_lengths if examples.target_order == "right_to_left" else None
    return GuidedAlignment(weight, links, offsets, index=examples.index, flip_lengths=flip)
