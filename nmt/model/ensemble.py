"""Ensemble decoding: several trained models search as one.

`Ensemble(models)` is a model like its members (nmt/model/interface.py), so greedy and
beam search, n-best lists and translation work unchanged. At every step each member scores the
same prefixes and the ensemble's distribution is the mean of the members' probabilities, taken
in log space:

    log p(y) = logsumexp_k log p_k(y) − log K

as fairseq's EnsembleModel does. (The mean of log-probabilities, a product of experts, would let
one member's near-zero probability veto a word the others agree on.) An ensemble of one model
gives that model's log-probabilities exactly. Attention weights are the mean of the members'
that have attention, so unknown-word replacement and attention plots still work, and forced
alignment (nmt/align/forced.py) reads an ensemble's attention, or its members' mean posterior
alignment, the same way.

The members need not share an architecture or a size, only the vocabularies: their outputs are
added id by id. `nmt.checkpoints.choose.load_ensemble` checks that and names the checkpoints
that differ.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmt.errors import NMTError
from nmt.model.interface import Reorderable, TranslationModel

Member = TranslationModel[Any, Any]  # members may be of either family


@dataclass
class EnsembleParts:
    """Each member's memory or decoder state, in member order; beam search selects rows of all."""

    parts: list[Reorderable]

    def select(self, index: Tensor) -> "EnsembleParts":
        return EnsembleParts([part.select(index) for part in self.parts])


class Ensemble(TranslationModel[EnsembleParts, EnsembleParts]):
    # The ensemble hands back one attention, its members' mean: one layer, one head. A head of
    # one member is that member's, so attention_heads asks for the member's checkpoint.
    attention_grid = (1, 1)
    alignment_layer = 0

    def __init__(self, models: Sequence[Member]):
        super().__init__()
        if not models:
            raise NMTError("an ensemble needs at least one model")
        self.members = nn.ModuleList(models)

    @property
    def models(self) -> list[Member]:
        """The members, typed (an nn.ModuleList hands back plain Modules)."""
        return cast(list[Member], list(self.members))

    @property
    def target_order(self) -> str:
        """The members' one order (nmt/checkpoints/choose.py checks that they share it)."""
        return self.models[0].target_order

    @property
    def offers_posterior(self) -> bool:
        return all(model.offers_posterior for model in self.models)

    def encode(self, src: Tensor, src_lengths: Tensor) -> EnsembleParts:
        return EnsembleParts([model.encode(src, src_lengths) for model in self.models])

    def init_state(self, memory: EnsembleParts) -> EnsembleParts:
        return EnsembleParts([model.init_state(part) for model, part in zip(self.models, memory.parts)])

    def decode_step(self, prev_tokens: Tensor, state: EnsembleParts, memory: EnsembleParts
                    ) -> tuple[Tensor, EnsembleParts, Tensor | None]:
        """prev_tokens (B,) → mean-probability log-probs (B, V), states, mean weights (B, S)."""
        models = self.models
        if len(models) == 1:  # the mean of one: that model's own numbers, at its own cost
            log_probs, new_state, weights = models[0].decode_step(prev_tokens, state.parts[0],
                                                                  memory.parts[0])
            return log_probs, EnsembleParts([new_state]), weights
        steps = [model.decode_step(prev_tokens, part_state, part_memory)
                 for model, part_state, part_memory in zip(models, state.parts, memory.parts)]
        members_log_probs, states, members_weights = zip(*steps)
        return (_mean_probability(members_log_probs), EnsembleParts(list(states)),
                _mean(members_weights))

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor
                ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing, as a member's forward: the mean-probability log-probs (B, T, V) (a
        softmax gives the mean back, so they serve as logits) and the mean weights (B, T, S)."""
        logits, weights = zip(*(model(src, src_lengths, tgt_in) for model in self.models))
        return _mean_probability([F.log_softmax(x.float(), dim=-1) for x in logits]), _mean(weights)

    def posterior_attention(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor,
                            tgt_out: Tensor) -> Tensor | None:
        """The mean of the members' posterior alignments (B, T, S) (Seq2Seq.posterior_attention):
        every member must be recurrent (offers_posterior)."""
        return _mean([model.posterior_attention(src, src_lengths, tgt_in, tgt_out)
                      for model in self.models])

    def attention_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        raise NMTError("--layer and --head pick a head of one model, and this is an ensemble: "
                       "name one member's checkpoint with --checkpoint PATH")

    def alignment_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        return self.attention_heads(src, src_lengths, tgt_in)


def _mean_probability(log_probs: Sequence[Tensor]) -> Tensor:
    """The members' log-probabilities (each (..., V)) → the log of their mean probability, in
    float32: logsumexp_k log p_k − log K."""
    stacked = torch.stack([x.float() for x in log_probs])  # (K, ..., V)
    return torch.logsumexp(stacked, dim=0) - math.log(len(log_probs))


def _mean(tensors: Iterable[Tensor | None]) -> Tensor | None:
    """The mean of the members' tensors that are not None (attention weights); None if all are."""
    present = [x for x in tensors if x is not None]
    return torch.stack(present).mean(dim=0) if present else None
