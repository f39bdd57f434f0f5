"""Reranking the beam's n-best list with rescoring models (eval.rerank), as Marian's right-to-left
rescoring does (Sennrich et al., 2016, WMT).

The main model(s) search an n-best list (n = search.beam_size); every rescoring model k reads
each candidate y teacher-forced and gives log p_k(y | x) (a right_to_left model, model.target_order,
reads y reversed). The candidate with the best

    score(y) = s(y) + Σ_k w_k · log p_k(y | x) / lp(|y|)

is chosen, where s(y) = log p(y | x) / lp(|y|) is the score the search ranked it by and lp the
same GNMT length penalty (nmt/decoding/hypothesis.py), |y| counting </s> when it was produced.
A rescoring model catches what the main one cannot see from its side: a right-to-left model
judges a sentence's beginning knowing how it ends. Rescoring models need the main model's
vocabularies and data settings (nmt/checkpoints/choose.py's check_compatible), not its family.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from nmt.checkpoints.choose import check_compatible
from nmt.checkpoints.file import load_checkpoint, model_from_checkpoint
from nmt.config.schema import SearchConfig
from nmt.data.batching import Example, collate, in_model_order
from nmt.data.vocab import PAD_ID
from nmt.decoding.hypothesis import Hypothesis, length_penalty
from nmt.errors import NMTError
from nmt.model import inference


@dataclass
class Rescorer:
    model: nn.Module  # in eval mode, on the main model's device
    weight: float  # w_k
    path: Path
    target_order: str  # the order it reads a candidate in


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
            batch = collate(examples, order[start:start + batch_size]).to(device)
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


class Reranker:
    """The rescoring models of eval.rerank; `rerank` reorders the search's n-best lists."""

    def __init__(self, rescorers: list[Rescorer]):
        self.rescorers = rescorers
        self.seconds = 0.0  # spent rescoring, over every call

    @classmethod
    def load(cls, paths: list[str | Path], weights: list[float], main) -> Reranker:
        """Load `paths` (eval.rerank) with their `weights` (eval.rerank_weights) beside `main`,
        a Translator: on its device, checked against its vocabularies and data settings."""
        if len(weights) != len(paths):
            raise NMTError(f"eval.rerank_weights has {len(weights)} weight(s) but eval.rerank names "
                           f"{len(paths)} checkpoint(s); give one weight per rescoring model")
        if any(w < 0 for w in weights):
            raise NMTError(f"eval.rerank_weights = {weights}: weights must be >= 0")
        first = (main.checkpoint or "the main model", main.config, main.src_vocab, main.tgt_vocab)
        rescorers = []
        for path, weight in zip(paths, weights):
            try:
                model, config, src_vocab, tgt_vocab = model_from_checkpoint(load_checkpoint(path),
                                                                            str(path))
                check_compatible(first, (path, config, src_vocab, tgt_vocab),
                                 "a rescoring model and the model it reranks")
            except NMTError as error:
                raise NMTError(f"eval.rerank: {error}") from None
            rescorers.append(Rescorer(model.to(main.device).eval(), float(weight), Path(path),
                                      config.model.target_order))
        return cls(rescorers)

    def rerank(self, src_ids: list[list[int]], found: list[list[Hypothesis]],
               search: SearchConfig) -> list[list[Hypothesis]]:
        """Each sentence's candidates (in reading order), best first by the combined score, which
        their `score` then holds. Empty sources are left as they are; a weight of 0 adds nothing,
        so the search's order stands."""
        start = time.perf_counter()
        pairs = [(i, j) for i, hyps in enumerate(found) if len(src_ids[i]) for j in range(len(hyps))]
        candidates = [found[i][j] for i, j in pairs]
        scores = [h.score for h in candidates]
        for rescorer in self.rescorers:
            if rescorer.weight == 0 or not candidates:
                continue
            log_probs = candidate_log_probs(
                rescorer.model, [src_ids[i] for i, _ in pairs],
                [in_model_order(h.tokens, rescorer.target_order) for h in candidates],
                [h.ended for h in candidates], next(rescorer.model.parameters()).device,
                search.batch_size * search.beam_size)
            for n, (hyp, log_prob) in enumerate(zip(candidates, log_probs)):
                steps = len(hyp.tokens) + int(hyp.ended)
                scores[n] += rescorer.weight * log_prob / length_penalty(steps, search.length_penalty)
        reranked = [list(hyps) for hyps in found]
        for (i, j), hyp, score in zip(pairs, candidates, scores):
            reranked[i][j] = dataclasses.replace(hyp, score=score)
        self.seconds += time.perf_counter() - start
        return [sorted(hyps, key=lambda h: -h.score) for hyps in reranked]  # stable: ties keep order

    @property
    def paths(self) -> list[str]:
        return [str(r.path) for r in self.rescorers]

    @property
    def weights(self) -> list[float]:
        return [r.weight for r in self.rescorers]
