"""Length-bucketed batches sized in target tokens, with padding masks and seeded shuffling.

Sentences of similar length go together, so a batch holds little padding: the decoder runs one
step per target position, and a padded position costs as much as a real one. The batches of an
epoch are a pure function of (seed, epoch), so a resumed run can skip exactly the batches it has
already trained on, and every rank of a distributed run sees the same global batches.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

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


def make_batches(examples: list[Example], batch_tokens: int, seed: int, epoch: int,
                 shuffle: bool = True) -> list[list[int]]:
    """Indices of each batch; a batch's padded target size (sentences × longest) <= batch_tokens.

    Sort by target then source length, with random tie-breaking so batches differ per epoch,
    cut into batches, then shuffle the batch order.
    """
    rng = random.Random(seed * 100_003 + epoch)
    if shuffle:
        keys = [(len(ex.tgt), len(ex.src), rng.random()) for ex in examples]
    else:
        keys = [(len(ex.tgt), len(ex.src), i) for i, ex in enumerate(examples)]
    order = sorted(range(len(examples)), key=keys.__getitem__)
    batches, current, longest = [], [], 0
    for index in order:
        length = len(examples[index].tgt) + 1  # + </s>
        if current and max(longest, length) * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(index)
        longest = max(longest, length)
    if current:
        batches.append(current)
    if shuffle:
        rng.shuffle(batches)
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
