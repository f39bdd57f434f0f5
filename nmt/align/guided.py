"""Guided alignment (Garg et al., 2019; OpenNMT-py's `lambda_align`): an auxiliary loss that
pulls the attention toward a statistical aligner's links of the training pairs.

With `training.guided_alignment` = λ > 0, eflomal aligns the training pairs once, in the model's
own tokens (their ids: what the model reads, <unk> included), both directions symmetrized with
grow-diag-final-and; the links are kept in runs/<name>/guided_links.txt so that a resumed run
trains toward the same ones. For each target token y_t with links to source tokens L_t, the loss
adds

    λ · −Σ_{s ∈ L_t} (1/|L_t|) · log a_ts

to the summed cross-entropy (tokens without a link add nothing), so it is normalized by the same
target-token count as the translation loss.
"""

from __future__ import annotations

import logging
from pathlib import Path

import torch
from torch import Tensor

from nmt.align.links import Link, format_links, parse_links
from nmt.align.statistical import eflomal_links
from nmt.align.symmetrize import grow_diag_final_and
from nmt.data.batching import Batch, Example
from nmt.io import atomic_write_lines, read_lines

log = logging.getLogger(__name__)


def eflomal_training_links(examples: list[Example]) -> list[set[Link]]:
    """Symmetrized eflomal links (source position, target position) of every example."""
    forward, backward = eflomal_links([[str(i) for i in ex.src] for ex in examples],
                                      [[str(i) for i in ex.tgt] for ex in examples])
    return [grow_diag_final_and(f, b) for f, b in zip(forward, backward)]


def load_or_align(examples: list[Example], path: Path) -> list[set[Link]]:
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
    """λ and the links of every training example, by its index in the training list."""

    def __init__(self, weight: float, links: list[set[Link]]):
        self.weight = weight
        # Each example's links as a (n, 2) tensor of (t, s), made once: a batch's targets are then
        # one scatter instead of a Python loop over ~650 links (3.7 ms a step on a 2-core CPU).
        self.link_positions = [torch.tensor([(t, s) for s, t in pairs], dtype=torch.long).view(-1, 2)
                               for pairs in links]

    def targets(self, batch: Batch) -> Tensor:
        """(B, T, S): row t of pair b spreads 1 evenly over the source tokens y_t is linked to."""
        batch_size, steps = batch.tgt_in.shape
        target = torch.zeros(batch_size, steps, batch.src.size(1))  # (B, T, S)
        positions = [self.link_positions[index] for index in batch.indices]
        rows = torch.repeat_interleave(torch.arange(batch_size),
                                       torch.tensor([len(p) for p in positions]))  # (N,)
        t, s = torch.cat(positions).unbind(1)  # (N,), (N,)
        inside = (t < steps) & (s < batch.src.size(1))
        target[rows[inside], t[inside], s[inside]] = 1.0
        return target / target.sum(-1, keepdim=True).clamp(min=1.0)

    def loss(self, batch: Batch, weights: Tensor | None) -> Tensor:
        """λ × the summed cross-entropy between the link rows and the attention (B, T, S)."""
        if weights is None:
            raise ValueError("guided alignment needs a model that returns attention weights")
        target = self.targets(batch).to(weights.device)
        log_attention = torch.log(weights.float().clamp(min=1e-9))
        return self.weight * -(target * log_attention).sum()


def for_training(weight: float, examples: list[Example], run_dir: Path, distributed) -> GuidedAlignment:
    """Rank 0 aligns (or reads the kept links); every rank gets the same links."""
    links = load_or_align(examples, run_dir / "guided_links.txt") if distributed.is_main else None
    return GuidedAlignment(weight, distributed.broadcast(links))
