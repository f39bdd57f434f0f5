"""Alignment from both directions: the forward model (Chinese → English) and the reverse one
(English → Chinese, `model.direction: reverse`), each teacher-forced on the same pair, combined
by nmt/align/agreement.py.

    aligner = BidirectionalAligner.from_checkpoints(["runs/tatoeba/checkpoints/best.pt"],
                                                    "runs/tatoeba_reverse/checkpoints/best.pt")
    soft = aligner.soft(pairs)                             # both directions' matrices per pair
    links = [s.links("grow-diag-final-and") for s in soft]  # {(Chinese char, English token)}

The reverse model reads the forward model's English tokens as its source and its Chinese tokens
as its target: trained on the same prepared data with the sides swapped, its vocabularies are
the forward's swapped (checked on loading, as eval.rerank checks its channel models). Its
attention, rows Chinese tokens and columns English tokens, is transposed into the forward's
orientation, its English pieces summed into the gold's units, so that both matrices are
(J English units, K Chinese tokens) before the links go to the Chinese characters.

Each direction reads its model's posterior alignment where the model has one (a recurrent
model; nmt/align/forced.py), else its attention, unless `posterior=False`.

A run's reverse model is its decoding plan's channel model (nmt/decoding/plan.py: a channel
member, or a reverse checkpoint of eval.rerank), or the one named (`scripts/align.py --reverse
PATH`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nmt.align.agreement import DEFAULT_BIDIRECTIONAL_METHOD, combine
from nmt.align.aligner import AttentionAligner, SoftAlignment
from nmt.align.forced import forced_attention
from nmt.align.links import AlignPair, Link
from nmt.align.units import project_source, sum_columns
from nmt.checkpoints.choose import load_beside
from nmt.decoding.plan import DecodingPlan
from nmt.errors import NMTError
from nmt.model import TranslationModel, has_alignment, has_posterior

TRAIN_REVERSE = ("train one beside the run's members (training.channel_members: 1), or train "
                 "configs/tatoeba_reverse.yaml and name its checkpoints/best.pt in eval.rerank, or "
                 "pass --reverse PATH")


@dataclass
class BidirectionalAlignment:
    forward: SoftAlignment  # the forward model's, as AttentionAligner.soft gives it
    # (K, P): the reverse model's, one row per Chinese token (its target), one column per English
    # token (its source); None for a pair with an empty side
    reverse_weights: np.ndarray | None

    @property
    def reverse_unit_weights(self) -> np.ndarray | None:
        """(J, K): the reverse attention transposed, English tokens summed into the J units."""
        if self.reverse_weights is None:
            return None
        return sum_columns(self.reverse_weights, self.forward.tgt_cover, self.forward.n_tgt_units).T

    def links(self, method: str = DEFAULT_BIDIRECTIONAL_METHOD,
              threshold: float | None = None) -> set[Link]:
        """(Chinese character, English unit) links by `method` (nmt/align/agreement.py)."""
        forward, reverse = self.forward.unit_weights, self.reverse_unit_weights
        if forward is None or reverse is None:
            return set()
        return project_source(combine(forward, reverse, method, threshold), self.forward.src_cover)


@dataclass
class ReverseModel:
    model: TranslationModel  # in eval mode, on the forward model's device
    path: Path
    step: int | None


def load_reverse(path: str | Path, forward: AttentionAligner) -> ReverseModel:
    """The reverse model at `path`, checked against the forward aligner's vocabularies (swapped)
    and data settings as every rescoring model is (nmt/checkpoints/choose.py's load_beside)."""
    forward_name = forward.paths[0] if forward.paths else "the forward model"
    model, config, step = load_beside(path, (forward_name, forward.config, forward.src_vocab,
                                       forward.tgt_vocab),
                                "a reverse model and the forward model it aligns with")
    if config.model.direction != "reverse":
        raise NMTError(f"{path} is a model.direction = {config.model.direction} model; the other "
                       f"direction's alignment needs an English → Chinese one: {TRAIN_REVERSE}")
    if not has_alignment(config.model):
        raise NMTError(f"{path}: its model.rnn.attention = none gives no attention to align with; "
                       f"train the reverse model with attention")
    return ReverseModel(model.to(forward.device).eval(), Path(path), step)


def run_reverse(plan: DecodingPlan, forward: AttentionAligner, path: str | Path | None = None
                ) -> ReverseModel:
    """`path` when given, else the plan's channel model (its first reverse rescoring model); a
    run without one is an NMTError that says what to train."""
    if path:
        return load_reverse(path, forward)
    if plan.channel is not None:
        return load_reverse(plan.channel.path, forward)
    named = f" (eval.rerank names {', '.join(plan.config.eval.rerank)})" if plan.config.eval.rerank else ""
    raise NMTError(f"--weights bidirectional needs a reverse (English → Chinese) model of the run "
                   f"{plan.config.name}, and it has none{named}: {TRAIN_REVERSE}")


class BidirectionalAligner:
    """The forward aligner and a reverse model, aligning each pair both ways."""

    def __init__(self, forward: AttentionAligner, reverse: TranslationModel,
                 reverse_path: Path | None = None, reverse_step: int | None = None):
        self.forward, self.reverse = forward, reverse
        self.reverse_path, self.reverse_step = reverse_path, reverse_step
        self.read: dict[str, str] = {}  # per direction, the matrix the last `soft` read

    @classmethod
    def for_plan(cls, plan: DecodingPlan, forward: AttentionAligner,
                 reverse_path: str | Path | None = None) -> BidirectionalAligner:
        """`forward` with the reverse model of a run's decoding plan (see run_reverse)."""
        reverse = run_reverse(plan, forward, reverse_path)
        return cls(forward, reverse.model, reverse.path, reverse.step)

    @classmethod
    def from_checkpoints(cls, forward_paths: list[str | Path], reverse_path: str | Path,
                         device: str = "auto", batch_size: int = 64) -> BidirectionalAligner:
        forward = AttentionAligner.from_checkpoints(forward_paths, device, batch_size)
        reverse = load_reverse(reverse_path, forward)
        return cls(forward, reverse.model, reverse.path, reverse.step)

    def soft(self, pairs: list[AlignPair], posterior: bool = True) -> list[BidirectionalAlignment]:
        """Both directions' matrices of every pair, in order: each model's posterior where it
        has one and `posterior`, else its attention."""
        forward_posterior = posterior and has_posterior(self.forward.model)
        reverse_posterior = posterior and has_posterior(self.reverse)
        self.read = {"forward": "posterior" if forward_posterior else "attention",
                     "reverse": "posterior" if reverse_posterior else "attention"}
        forward = self.forward.soft(pairs, posterior=forward_posterior)
        english = [self.forward.tgt_vocab.encode(s.tgt_tokens) for s in forward]
        chinese = [self.forward.src_vocab.encode(s.src_tokens) for s in forward]
        reverse = forced_attention(self.reverse, english, chinese, self.forward.batch_size,
                                   self.forward.device, posterior=reverse_posterior)  # (K, P) each
        return [BidirectionalAlignment(f, r) for f, r in zip(forward, reverse, strict=True)]

    def align(self, pairs: list[AlignPair], method: str = DEFAULT_BIDIRECTIONAL_METHOD,
              threshold: float | None = None) -> list[set[Link]]:
        return [soft.links(method, threshold) for soft in self.soft(pairs)]
