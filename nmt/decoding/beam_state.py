"""The state of a batched beam search: the open hypotheses of every sentence still searching,
and each step's bookkeeping on them (expand, finish, advance, stop, drop).

The rules these steps follow are in nmt/decoding/beam.py's docstring; `Scoring` holds what a
score adds to the normalized log-probability (nmt/decoding/search.py's formula).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

import torch
from torch import Tensor

from nmt.data.vocab import BOS_ID, EOS_ID
from nmt.decoding.finished import FinishedPool
from nmt.decoding.hypothesis import length_penalty
from nmt.decoding.output_rules import forbid_specials, max_output_lengths
from nmt.errors import NMTError
from nmt.model.interface import M, S, StepDecoder


@dataclass
class Scoring:
    """What a hypothesis's score adds to its normalized log-probability (the formula in
    nmt/decoding/search.py's docstring)."""

    word_reward: float = 0.0  # per decoding step, </s> included
    coverage: float = 0.0  # β of the coverage penalty; 0: attention is not read

    def coverage_penalty(self, coverage: Tensor, src_mask: Tensor) -> Tensor:
        """β Σ_j log min(c_j, 1) over the real source tokens: coverage (R, S) → (R,)."""
        # A token never attended has c_j = 0 (softmax weights underflow): floor it so the
        # penalty stays finite, and very low, instead of -inf for every hypothesis alike.
        covered = coverage.float().clamp(min=1e-6, max=1.0).log().masked_fill(~src_mask, 0.0)
        return self.coverage * covered.sum(dim=1)


@dataclass
class Candidates:
    """The 2K best continuations of each active sentence, best first."""

    scores: Tensor  # (A, 2K) log-probabilities
    tokens: Tensor  # (A, 2K)
    rows: Tensor  # (A, 2K) the row of the (A*W, ...) tensors each one extends
    is_eos: Tensor  # (A, 2K): at most W of them, one per beam
    coverage: Tensor | None = None  # (A, 2K) each one's coverage penalty, when β > 0


@dataclass
class Beams(Generic[M, S]):
    """The open hypotheses of the sentences still searching: A sentences of W rows each.

    The first step expands the one <s> hypothesis per sentence (W = 1); the K best of its
    continuations fill the beam, and from then on each sentence has K rows (W = K). M and S are
    the model's memory and decoder state types."""

    k: int
    active: Tensor  # (A,) sentence ids still searching
    max_lengths: Tensor  # (A,) decoding steps allowed, </s> included
    best_penalty: Tensor  # (A,) the largest length penalty a hypothesis can get
    memory: M  # the encoder's output, one row per hypothesis once W = K
    state: S  # the decoder state, (A*W) rows
    scores: Tensor  # (A, W) log-probabilities of the open hypotheses
    prev: Tensor  # (A*W,) their last tokens
    history: Tensor  # (A*W, t) tokens so far
    src_mask: Tensor  # (A*W, S) the real source tokens of each row's sentence (kept in
    # step with the rows only when coverage is)
    scoring: Scoring
    coverage: Tensor | None = None  # (A*W, S) attention summed over the steps so far, when β > 0
    step_weights: Tensor | None = None  # (A*W, S) this step's attention, when β > 0
    attention: Tensor | None = None  # (A*W, t, S) weights so far, when kept
    width: int = 1

    @classmethod
    def start(cls, model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, k: int, alpha: float,
              max_length_ratio: float, scoring: Scoring) -> Beams[M, S]:
        batch, device = src.size(0), src.device
        memory = model.encode(src, src_lengths)
        max_lengths = max_output_lengths(src_lengths, max_length_ratio).to(device)  # (B,)
        prev = torch.full((batch,), BOS_ID, dtype=torch.long, device=device)  # (B,)
        src_mask = (torch.arange(src.size(1), device=device).unsqueeze(0)
                    < src_lengths.to(device).unsqueeze(1))  # (B, S)
        coverage = src.new_zeros(src.shape, dtype=torch.float) if scoring.coverage else None
        return cls(k, torch.arange(batch, device=device), max_lengths,
                   length_penalty(max_lengths.float(), alpha), memory, model.init_state(memory),
                   torch.zeros(batch, 1, device=device), prev, prev.new_empty(batch, 0),
                   src_mask, scoring, coverage)

    def decode_step(self, model: StepDecoder[M, S], keep_attention: bool) -> Tensor:
        """One decoder step for every open hypothesis → log-probs (A*W, V)."""
        log_probs, self.state, weights = model.decode_step(self.prev, self.state, self.memory)
        vocab = log_probs.size(1)
        if vocab < 2 * self.k:
            raise NMTError(f"search.beam_size {self.k} needs at least {2 * self.k} target tokens; "
                           f"the vocabulary has {vocab}")
        if self.coverage is not None:
            if weights is None:
                raise NMTError("search.coverage_penalty reads the attention, and this model has "
                               "none (model.rnn.attention = none): set it to 0")
            self.step_weights = weights.float()
        if keep_attention and weights is not None:
            step_weights = weights.unsqueeze(1)  # (A*W, 1, S)
            self.attention = (step_weights if self.attention is None
                              else torch.cat([self.attention, step_weights], 1))
        return log_probs

    def best_candidates(self, log_probs: Tensor, t: int) -> Candidates:
        # The 2K best of all W*V continuations are among each beam's own 2K best tokens, so
        # the score is added to those only, not to the whole (A*W, V) table.
        # With a coverage penalty they are ranked by log-probability plus the penalty of their
        # row's attention after this step (one value per row: every token of a row shares it).
        n_active, k, width = self.active.numel(), self.k, self.width
        row_best, row_tokens = forbid_specials(log_probs, t).topk(2 * k, dim=1)  # (A*W, 2K)
        candidates = (self.scores.view(-1, 1) + row_best).view(n_active, width * 2 * k)
        row_penalty = None
        if self.coverage is not None and self.step_weights is not None:
            row_penalty = self.scoring.coverage_penalty(self.coverage + self.step_weights,
                                                        self.src_mask)  # (A*W,)
            ranks = candidates + row_penalty.view(n_active, width).repeat_interleave(2 * k, dim=1)
            top_index = ranks.topk(2 * k, dim=1).indices  # (A, 2K) best first
            top_scores = candidates.gather(1, top_index)
        else:
            top_scores, top_index = candidates.topk(2 * k, dim=1)  # (A, 2K) best first
        tokens = row_tokens.view(n_active, width * 2 * k).gather(1, top_index)  # (A, 2K)
        rows = top_index // (2 * k) + (torch.arange(n_active, device=tokens.device) * width).unsqueeze(1)
        coverage = None if row_penalty is None else row_penalty[rows]  # (A, 2K)
        return Candidates(top_scores, tokens, rows, tokens == EOS_ID, coverage)

    def finish_ended(self, best: Candidates, pool: FinishedPool, t: int) -> None:
        """Candidates ending in </s> among the best K are finished: history + </s>."""
        k = self.k
        ended = best.is_eos[:, :k] & (best.scores[:, :k] > float("-inf"))  # (A, K)
        if ended.any():
            bonus = self.bonus(t + 1, None if best.coverage is None else best.coverage[:, :k])
            pool.add(self.active, ended, best.rows[:, :k], best.scores[:, :k], self.history,
                     self.attention, t + 1, bonus)

    def bonus(self, steps: int, coverage: Tensor | None) -> Tensor | float:
        """What a hypothesis of `steps` steps adds to its normalized log-probability: the word
        reward and its coverage penalty (A, K), when set."""
        reward = self.scoring.word_reward * steps
        return reward if coverage is None else coverage + reward

    def advance(self, best: Candidates) -> None:
        """The best K candidates that go on form the next beam (a stable sort keeps score order)."""
        k, n_active = self.k, self.active.numel()
        keep = best.is_eos.to(torch.uint8).argsort(dim=1, stable=True)[:, :k]  # (A, K)
        self.scores = best.scores.gather(1, keep)  # (A, K)
        alive_rows = best.rows.gather(1, keep).view(-1)  # (A*K,)
        self.prev = best.tokens.gather(1, keep).view(-1)  # (A*K,)
        self.history = torch.cat([self.history[alive_rows], self.prev.unsqueeze(1)], dim=1)
        self.attention = None if self.attention is None else self.attention[alive_rows]
        if self.coverage is not None and self.step_weights is not None:
            # the mask follows the rows only where the coverage penalty reads it
            self.coverage = (self.coverage + self.step_weights)[alive_rows]
            self.src_mask = self.src_mask[alive_rows]
        self.state = self.state.select(alive_rows)
        if self.width == 1:  # from now on K rows per sentence
            self.width = k
            self.memory = self.memory.select(
                torch.arange(n_active, device=self.prev.device).repeat_interleave(k))

    def finish_at_max_length(self, pool: FinishedPool, t: int) -> None:
        """At the maximum length the open hypotheses end here, without </s>."""
        at_max = t + 1 >= self.max_lengths  # (A,)
        if at_max.any():
            n_active, k = self.active.numel(), self.k
            cut = at_max.unsqueeze(1) & (self.scores > float("-inf"))  # (A, K)
            own_rows = torch.arange(n_active * k, device=self.prev.device).view(n_active, k)
            coverage = None if self.coverage is None else self.scoring.coverage_penalty(
                self.coverage, self.src_mask).view(n_active, k)  # (A, K)
            pool.add(self.active, cut, own_rows, self.scores, self.history, self.attention, t + 1,
                     self.bonus(t + 1, coverage))

    def done(self, best: Candidates, pool: FinishedPool, n_best: int, t: int,
             stop: str = "best_ended") -> Tensor:
        """(A,) sentences done: at their maximum length; or with n_best finished and no open
        hypothesis able to beat the n-th best (its best possible final score: its log-prob over
        the largest penalty, plus the largest reward); or, as `stop` says, with n_best finished
        and the step's best candidate ending in </s> (best_ended) or with K finished (beam_full)."""
        at_max = t + 1 >= self.max_lengths  # (A,)
        reward = self.scoring.word_reward
        longest = self.max_lengths if reward > 0 else torch.full_like(self.max_lengths, t + 2)
        bound = self.scores.max(dim=1).values / self.best_penalty + reward * longest  # (A,)
        enough = pool.count >= n_best
        hopeless = enough & (pool.nth_best >= bound)
        if stop == "beam_full":
            return at_max | hopeless | (pool.count >= self.k)
        return at_max | hopeless | (enough & best.is_eos[:, 0])

    def drop(self, done: Tensor, pool: FinishedPool) -> None:
        """Sentences that are done leave the batch: later steps run on the others only."""
        keep_sentences = (~done).nonzero().squeeze(1)  # (A',)
        keep_rows = (keep_sentences.unsqueeze(1) * self.k
                     + torch.arange(self.k, device=done.device)).view(-1)  # (A'*K,)
        self.active, self.max_lengths = self.active[keep_sentences], self.max_lengths[keep_sentences]
        self.best_penalty = self.best_penalty[keep_sentences]
        self.scores = self.scores[keep_sentences]
        pool.keep(keep_sentences)
        self.memory, self.state = self.memory.select(keep_rows), self.state.select(keep_rows)
        self.prev, self.history = self.prev[keep_rows], self.history[keep_rows]
        self.attention = None if self.attention is None else self.attention[keep_rows]
        if self.coverage is not None:
            self.coverage, self.src_mask = self.coverage[keep_rows], self.src_mask[keep_rows]
