"""Reranking the beam's n-best list with rescoring models (eval.rerank), as Marian's right-to-left
rescoring does (Sennrich et al., 2016, WMT).

The main model(s) search an n-best list (n = search.beam_size); every rescoring model k reads
each candidate y teacher-forced and gives log p_k(y | x) (a right_to_left model, model.target_order,
reads y reversed), or, for a reverse model (model.direction: reverse, English → Chinese), reads
the source x teacher-forced after y and gives the channel score log p_k(x | y). The candidate
with the best

    score(y) = s(y) + Σ_k w_k · log p_k(y | x) / lp(|y|)   (+ w_k · log p_k(x | y), unnormalized)

is chosen, where s(y) = log p(y | x) / lp(|y|) is the score the search ranked it by (with the
search's word reward and coverage penalty, when set) and lp the same GNMT length penalty
(nmt/decoding/hypothesis.py), |y| counting </s> when it was produced. x is the same for every
candidate of a sentence, so its channel score needs no length normalization.

A rescoring model catches what the main one cannot see from its side: a right-to-left model
judges a sentence's beginning knowing how it ends; a channel model (noisy-channel reranking,
Yee et al., 2019) judges whether y explains all of x, so a translation that drops source words
scores badly however fluent it is. Rescoring models need the main model's vocabularies (swapped,
for a reverse model) and data settings (nmt/checkpoints/choose.py's check_compatible), not its
family.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from nmt.checkpoints.choose import load_beside
from nmt.config.schema import SearchConfig
from nmt.data.batching import Example, collate, in_model_order
from nmt.data.vocab import PAD_ID
from nmt.decoding.hypothesis import Hypothesis, length_penalty
from nmt.decoding.plan import RescoringModel
from nmt.errors import NMTError
from nmt.model import inference


@dataclass
class Rescorer:
    model: nn.Module  # in eval mode, on the main model's device
    weight: float  # w_k
    path: Path
    target_order: str  # the order it reads a candidate in (a reverse model: the source)
    reverse: bool = False  # a channel model: log p(x | y), English → Chinese


def candidate_log_probs(model: nn.Module, src_ids: list[list[int]], tgt_ids: list[list[int]],
                        ended: list[bool], device: torch.device | str,
                        batch_size: int = 64) -> list[float]:
    """log p(tgt | src) of each pair by teacher forcing: the sum of its tokens' log-probabilities,
    plus </s>'s where `ended`; `tgt_ids` in the order the model writes. Pairs are batched by
    length; the model runs in eval mode without gradients and is put back into its mode after."""
    examples = [Example(list(s), list(t)) for s, t in zip(src_ids, tgt_ids, strict=True)]
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i].tgt), len(examples[i].src)))
    found = [0.0] * len(examples)
    with inference(model):
        for start in range(0, len(order), batch_size):
            batch = collate(examples, order[start:start + batch_size]).to(torch.device(device))
            logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V)
            token_log_probs = F.log_softmax(logits.float(), dim=-1).gather(
                2, batch.tgt_out.unsqueeze(2)).squeeze(2)  # (B, T)
            steps = torch.tensor([len(examples[i].tgt) + ended[i] for i in batch.indices],
                                 device=batch.tgt_out.device)  # (B,) scored positions
            positions = torch.arange(batch.tgt_out.size(1), device=steps.device)  # (T,)
            counted = (positions < steps.unsqueeze(1)) & (batch.tgt_out != PAD_ID)  # (B, T)
            sums = token_log_probs.masked_fill(~counted, 0.0).sum(dim=1)  # (B,)
            for i, value in zip(batch.indices, sums.tolist()):
                found[i] = value
    return found


def combine(found: list[list[Hypothesis]], terms: list[list[list[float]] | None],
            weights: list[float]) -> list[list[Hypothesis]]:
    """Each sentence's candidates best first by s(y) + Σ_k w_k · term_k(y), which their `score`
    then holds (stable: ties keep the search's order); with every term computed, each candidate
    keeps them in `rescores`."""
    reranked = []
    for i, hyps in enumerate(found):
        scores = [hyp.score + sum(w * t[i][j] for w, t in zip(weights, terms) if t is not None)
                  for j, hyp in enumerate(hyps)]
        kept = [tuple(t[i][j] for t in terms if t is not None) if None not in terms else ()
                for j in range(len(hyps))]
        ranked = [dataclasses.replace(hyp, score=score, rescores=rescores)
                  for hyp, score, rescores in zip(hyps, scores, kept)]
        reranked.append(sorted(ranked, key=lambda h: -h.score))
    return reranked


def reweighed(found: list[list[Hypothesis]], weights: list[float]) -> list[list[Hypothesis]]:
    """The n-best lists a Reranker with all weights 0 returned (`Reranker.scoring_all`), ranked
    again as with `weights`: each candidate's search score plus Σ_k w_k · its `rescores`."""
    return [sorted((dataclasses.replace(hyp, score=hyp.score + sum(
        w * t for w, t in zip(weights, hyp.rescores))) for hyp in hyps), key=lambda h: -h.score)
        for hyps in found]


class Reranker:
    """The rescoring models of eval.rerank; `rerank` reorders the search's n-best lists."""

    def __init__(self, rescorers: list[Rescorer], score_all: bool = False):
        self.rescorers = rescorers
        self.score_all = score_all  # also read the candidates with a rescorer of weight 0
        self.seconds = 0.0  # spent rescoring, over every call

    def scoring_all(self) -> Reranker:
        """These rescorers with weight 0, each reading every candidate: the search's order
        stands, and each candidate keeps every term in `rescores` (make tune's `reweighed`)."""
        return Reranker([dataclasses.replace(r, weight=0.0) for r in self.rescorers], score_all=True)

    @classmethod
    def load(cls, models: Sequence[RescoringModel], main) -> Reranker:
        """Load a plan's rescoring `models` beside `main`, a Translator: on its device, checked
        against its vocabularies (swapped for a channel model) and data settings."""
        first = (main.checkpoint or "the main model", main.config, main.src_vocab, main.tgt_vocab)
        rescorers = []
        for planned in models:
            try:
                model, config, _ = load_beside(planned.path, first,
                                            "a rescoring model and the model it reranks")
            except NMTError as error:
                raise NMTError(f"eval.rerank: {error}") from None
            rescorers.append(Rescorer(model.to(main.device).eval(), planned.weight, planned.path,
                                      config.model.target_order, config.model.direction == "reverse"))
        return cls(rescorers)

    def rerank(self, src_ids: list[list[int]], found: list[list[Hypothesis]],
               search: SearchConfig) -> list[list[Hypothesis]]:
        """Each sentence's candidates (in reading order), best first by the combined score, which
        their `score` then holds. Empty sources are left as they are; a weight of 0 adds nothing,
        so the search's order stands."""
        start = time.perf_counter()
        terms = self.terms(src_ids, found, search, skip_unweighted=not self.score_all)
        reranked = combine(found, terms, [r.weight for r in self.rescorers])
        self.seconds += time.perf_counter() - start
        return reranked

    def terms(self, src_ids: list[list[int]], found: list[list[Hypothesis]], search: SearchConfig,
              skip_unweighted: bool = False) -> list[list[list[float]] | None]:
        """Per rescorer, its term of each candidate's score before the weight: log p(y | x) /
        lp(|y|), or log p(x | y) for a channel model; shaped like `found`. A rescorer skipped
        (weight 0 with `skip_unweighted`) gives None."""
        pairs = [(i, j) for i, hyps in enumerate(found) if len(src_ids[i]) for j in range(len(hyps))]
        candidates = [found[i][j] for i, j in pairs]
        all_terms: list[list[list[float]] | None] = []
        for rescorer in self.rescorers:
            if (skip_unweighted and rescorer.weight == 0) or not candidates:
                all_terms.append(None)
                continue
            log_probs = self.candidate_scores(rescorer, [src_ids[i] for i, _ in pairs],
                                              candidates, search.batch_size * search.beam_size)
            shaped: list[list[float]] = [[0.0] * len(hyps) for hyps in found]
            for (i, j), hyp, log_prob in zip(pairs, candidates, log_probs):
                steps = len(hyp.tokens) + int(hyp.ended)
                scale = 1.0 if rescorer.reverse else length_penalty(steps, search.length_penalty)
                shaped[i][j] = log_prob / scale
            all_terms.append(shaped)
        return all_terms

    @staticmethod
    def candidate_scores(rescorer: Rescorer, sources: list[list[int]],
                         candidates: list[Hypothesis], batch_size: int) -> list[float]:
        """log p(y | x) of each candidate y of its source x, or log p(x | y) for a channel model
        (the whole source, </s> included, read after the candidate)."""
        device = next(rescorer.model.parameters()).device
        if rescorer.reverse:
            return candidate_log_probs(
                rescorer.model, [h.tokens for h in candidates],
                [in_model_order(x, rescorer.target_order) for x in sources],
                [True] * len(candidates), device, batch_size)
        return candidate_log_probs(
            rescorer.model, sources,
            [in_model_order(h.tokens, rescorer.target_order) for h in candidates],
            [h.ended for h in candidates], device, batch_size)

    @property
    def paths(self) -> list[str]:
        return [str(r.path) for r in self.rescorers]

    @property
    def weights(self) -> list[float]:
        return [r.weight for r in self.rescorers]
