"""Length-bucketed batches sized in target tokens, with padding masks and seeded shuffling.

Sentences of similar length go together, so a batch holds little padding: the decoder runs one
step per target position, and a padded position costs as much as a real one. The batches of an
epoch are a pure function of (seed, epoch), so a resumed run can skip exactly the batches it has
already trained on, and every rank of a distributed run sees the same global batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab
from nmt.errors import NMTError
from nmt.io import read_lines


@dataclass
class Example:
    src: list[int]  # source ids, no <s> or </s>
    tgt: list[int]  # target ids, no <s> or </s>


@dataclass
class Batch:
    src: Tensor  # (B, S) padded with PAD_ID
    src_lengths: Tensor  # (B,)
    tgt_in: Tensor  # (B, T) <s> y_1 .. y_n, padded
    tgt_out: Tensor  # (B, T) y_1 .. y_n </s>, padded
    indices: list[int]  # positions in the dataset

    @property
    def target_tokens(self) -> int:
        return int((self.tgt_out != PAD_ID).sum())

    def to(self, device: torch.device) -> "Batch":
        return Batch(self.src.to(device), self.src_lengths.to(device), self.tgt_in.to(device),
                     self.tgt_out.to(device), self.indices)


def load_examples(src_path: Path, tgt_path: Path, src_vocab: Vocab, tgt_vocab: Vocab,
                  max_length: int | None = None) -> list[Example]:
    """Read parallel token files (one sentence a line); drop pairs longer than max_length."""
    examples = []
    src_lines, tgt_lines = read_lines(src_path), read_lines(tgt_path)
    if len(src_lines) != len(tgt_lines):  # a truncated or damaged file: never zip() it silently
        raise NMTError(f"{src_path} has {len(src_lines)} lines but {tgt_path} has "
                       f"{len(tgt_lines)}; the prepared data is damaged: delete "
                       f"{Path(src_path).parent} and prepare again")
    for src_line, tgt_line in zip(src_lines, tgt_lines, strict=True):
        src, tgt = src_line.split(), tgt_line.split()
        if not src or not tgt or (max_length and (len(src) > max_length or len(tgt) > max_length)):
            continue
        examples.append(Example(src_vocab.encode(src), tgt_vocab.encode(tgt)))
    return examples


def in_model_order(tgt: list[int], target_order: str) -> list[int]:
    """Target ids as a model of `model.target_order` reads and writes them: reversed for a
    right_to_left model (y_n .. y_1), as they are otherwise. Applied twice, it gives the ids
    back, so it also turns such a model's output into reading order."""
    return list(tgt)[::-1] if target_order == "right_to_left" else list(tgt)


def in_target_order(examples: list[Example], target_order: str) -> list[Example]:
    """Training or dev pairs as a model of `model.target_order` learns them: a right_to_left
    model is trained (and its dev loss measured) on every target reversed."""
    if target_order == "left_to_right":
        return examples
    return [Example(ex.src, in_model_order(ex.tgt, target_order)) for ex in examples]


def lengths_of(examples) -> tuple[np.ndarray, np.ndarray]:
    """(source lengths, target lengths) of every pair, (N,) each: a dataset's own arrays where it
    has them (PairArrays), else counted from a list of Example (dev sets, distilled targets)."""
    if hasattr(examples, "tgt_lengths"):
        return examples.src_lengths, examples.tgt_lengths
    return (np.fromiter((len(ex.src) for ex in examples), np.int64, len(examples)),
            np.fromiter((len(ex.tgt) for ex in examples), np.int64, len(examples)))


def make_batches(examples, batch_tokens: int, seed: int, epoch: int,
                 shuffle: bool = True) -> list[list[int]]:
    """Indices of each batch; a batch's padded target size (sentences × longest) <= batch_tokens.

    `examples`: a list of Example or a dataset with length arrays (PairArrays). Sort by target
    then source length, ties broken at random by (seed, epoch) so batches differ per epoch (in
    index order without shuffle), cut greedily into batches, then shuffle the batch order.
    """
    src_lengths, tgt_lengths = lengths_of(examples)
    rng = np.random.default_rng([seed, epoch])
    ties = rng.random(len(tgt_lengths)) if shuffle else np.arange(len(tgt_lengths))
    order = np.lexsort((ties, src_lengths, tgt_lengths))  # (N,) the last key sorts first
    padded = tgt_lengths[order].astype(np.int64) + 1  # (N,) + </s>, non-decreasing
    batches, start = [], 0
    while start < len(order):
        # Sorted, a batch's longest target is its last: k sentences fit while padded * k fits.
        most = max(1, batch_tokens // int(padded[start]))
        window = padded[start:start + most]
        sizes = window * np.arange(1, len(window) + 1)  # padded size of the first k, k = 1..
        size = max(1, int(np.searchsorted(sizes, batch_tokens, side="right")))
        batches.append(order[start:start + size].tolist())
        start += size
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def _pad(sequences: list[list[int]]) -> Tensor:
    width = max(len(s) for s in sequences)
    return torch.tensor([s + [PAD_ID] * (width - len(s)) for s in sequences], dtype=torch.long)


def collate(examples: list[Example], indices: list[int]) -> Batch:
    chosen = [examples[i] for i in indices]
    src = _pad([ex.src for ex in chosen])  # (B, S)
    src_lengths = torch.tensor([len(ex.src) for ex in chosen], dtype=torch.long)  # (B,)
    tgt_in = _pad([[BOS_ID] + ex.tgt for ex in chosen])  # (B, T)
    tgt_out = _pad([ex.tgt + [EOS_ID] for ex in chosen])  # (B, T)
    return Batch(src, src_lengths, tgt_in, tgt_out, list(indices))
