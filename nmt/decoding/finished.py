"""The finished hypotheses of a beam search, collected step by step for all sentences at once."""

from __future__ import annotations

import torch
from torch import Tensor

from nmt.decoding.hypothesis import Hypothesis, length_penalty


class FinishedPool:
    """Per active sentence: how many hypotheses finished and the n best scores so far (what
    decides when a sentence is done); and every finished hypothesis that could still make its
    sentence's n-best list, stored as one group of tensors per step."""

    def __init__(self, batch: int, n_best: int, alpha: float, device: torch.device):
        self.n_best, self.alpha = n_best, alpha
        self.count = torch.zeros(batch, dtype=torch.long, device=device)  # (A,) all finished
        self.best = torch.full((batch, n_best), float("-inf"), device=device)  # (A, n) descending
        self._groups: list[tuple] = []

    @property
    def nth_best(self) -> Tensor:
        """(A,) the n-th best finished score, -inf while fewer than n have finished."""
        return self.best[:, -1]

    def add(self, active: Tensor, finished: Tensor, rows: Tensor, log_probs: Tensor,
            history: Tensor, attention: Tensor | None, steps: int,
            bonus: Tensor | float = 0.0) -> None:
        """Record the candidates where `finished` (A, K) is True.

        active (A,) sentence ids; rows (A, K) each candidate's row in history (A*K, t) and
        attention (A*K, steps, S); log_probs (A, K); steps: decoding steps taken, </s> included;
        bonus: added to the normalized log-probability (word reward, coverage penalty: a number
        or (A, K)). A candidate with fewer tokens than steps ended with </s>.
        """
        scores = (log_probs / length_penalty(float(steps), self.alpha) + bonus).masked_fill(
            ~finished, float("-inf"))  # (A, K)
        worthy = finished & (scores > self.nth_best.unsqueeze(1))  # (A, K) may enter the n-best
        self.count += finished.sum(dim=1)
        self.best = torch.cat([self.best, scores], dim=1).topk(self.n_best, dim=1).values
        if worthy.any():
            picked = rows[worthy]  # (E,)
            self._groups.append((
                active.unsqueeze(1).expand_as(worthy)[worthy], scores[worthy], log_probs[worthy],
                history[picked], None if attention is None else attention[picked], steps))

    def keep(self, index: Tensor) -> None:
        """Only the sentences `index` (A',) of the active ones go on searching."""
        self.count, self.best = self.count[index], self.best[index]

    def results(self, src_lengths: list[int]) -> list[list[Hypothesis]]:
        """Per sentence, its n best hypotheses, best first."""
        found: list[list[Hypothesis]] = [[] for _ in src_lengths]
        for sentences, scores, log_probs, tokens, attention, steps in self._groups:
            tokens = tokens.tolist()
            weights = None if attention is None else attention.float().cpu().numpy()  # (E, T, S)
            for j, (i, score, log_prob) in enumerate(zip(sentences.tolist(), scores.tolist(),
                                                         log_probs.tolist())):
                found[i].append(Hypothesis(
                    tokens[j], score, log_prob, ended=len(tokens[j]) < steps,
                    attention=None if weights is None else weights[j, :, : src_lengths[i]].copy()))
        return [sorted(hyps, key=lambda h: -h.score)[: self.n_best] for hyps in found]
