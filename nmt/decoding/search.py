"""Decoding: from a batch of source sentences to the best target sequences.

`search` is the one entry point: greedy search for beam size 1, beam search otherwise. Both work
on the whole batch at once; the only Python loop is over time steps. Sentences that are done
leave the batch, so the last steps run on the few long sentences only. All three take
`(model, src, src_lengths, *, ...)` with the search parameters as keywords, in one order:
beam_size, n_best, alpha, word_reward, coverage_penalty, stop, max_length_ratio,
keep_attention. The model is anything with encode / init_state / decode_step
(nmt.model.interface.StepDecoder).

Scores are GNMT-normalized (Wu et al., 2016), with a word reward (He et al., 2016) and GNMT's
coverage penalty:

    score(y) = log P(y|x) / lp(|y|) + reward · |y| + β Σ_j log min(Σ_i a_ij, 1)

with lp(l) = ((5 + l) / 6) ** alpha and |y| = l counting every decoding step, </s> included.
alpha = 0 ranks by plain log-probability; larger alphas and rewards favour longer outputs. The
coverage term sums, for each real source token j, the attention a_ij it received over the
output's steps: 0 once every source token got a total of 1, lower for each one left out (an
ensemble's attention is its members' mean, a Transformer's its alignment layer's). It ranks the
open hypotheses too: at each step the beam keeps the 2K candidates best by log-probability plus
the coverage term of their attention so far, so a hypothesis that skips a source word falls out
of the beam, not only out of the final ranking. (All candidates of a sentence have the same
length at a step, so the length terms change only how finished hypotheses of different lengths
compare, and when a search may stop.)

Beam search (batched over sentences × beams, K = beam size):
- each step expands the K open hypotheses of each sentence and takes the 2K best candidates; a
  candidate ending in </s> among the best K is finished and kept; the best K that do not end
  in </s> form the next beam, so the beam always holds K open hypotheses;
- a sentence is done (search.stop = best_ended), once it has n_best finished hypotheses, when
  the best candidate of the step ends in </s> (as in OpenNMT and Joey NMT; with K = 1 this is
  exactly greedy search), or (beam_full) once K hypotheses have finished (as in fairseq); or
  earlier, when no open hypothesis can still beat the n-th best finished one; and at its maximum
  output length, where the open hypotheses end without </s>.
- The early stop is sound: log-probabilities only fall, the length penalty can at most grow to
  lp(max length), the reward to reward · max length, and the coverage term is never above 0, so
  an open hypothesis with log-probability s never scores above s / lp(max length) + reward ·
  max length. best_ended is sound for the best hypothesis only with alpha = 0 and no reward
  (every open one is already below it); otherwise it is the usual heuristic, since a longer
  hypothesis could still overtake after normalization: beam_full waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic

import numpy as np
import torch
from torch import Tensor

from nmt.config.schema import SearchConfig
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmt.decoding.finished import FinishedPool
from nmt.decoding.hypothesis import Hypothesis, length_penalty
from nmt.errors import NMTError
from nmt.model.interface import M, S, StepDecoder


def max_output_lengths(src_lengths: Tensor, ratio: float) -> Tensor:
    """ceil(ratio * source length) + 10 decoding steps per sentence, </s> included."""
    return torch.ceil(src_lengths.double() * ratio).long() + 10  # (B,)


@torch.inference_mode()
def search(model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, *, config: SearchConfig,
           keep_attention: bool = True) -> list[list[Hypothesis]]:
    """src (B, S) padded with PAD_ID, src_lengths (B,) → per sentence its n-best list, best first.

    The model must be in eval mode (dropout off); `nmt.decoding.translate` takes care of that.
    """
    if config.n_best > config.beam_size:
        raise NMTError(f"search.n_best ({config.n_best}) must be <= search.beam_size "
                       f"({config.beam_size}): a beam of K keeps at most K hypotheses")
    if config.beam_size == 1:
        return greedy_search(model, src, src_lengths, alpha=config.length_penalty,
                             max_length_ratio=config.max_length_ratio,
                             keep_attention=keep_attention)
    return beam_search(model, src, src_lengths, beam_size=config.beam_size, n_best=config.n_best,
                       alpha=config.length_penalty, word_reward=config.word_reward,
                       coverage_penalty=config.coverage_penalty, stop=config.stop,
                       max_length_ratio=config.max_length_ratio, keep_attention=keep_attention)


def _forbid_specials(log_probs: Tensor, step: int) -> Tensor:
    """<pad> and <s> are never outputs (training never scores them as targets), and </s> is not
    the first one: a non-empty source never gets an empty translation. An undertrained model
    often gives </s> alone the highest probability of any output, and beam search finds it."""
    log_probs[:, PAD_ID] = float("-inf")
    log_probs[:, BOS_ID] = float("-inf")
    if step == 0:
        log_probs[:, EOS_ID] = float("-inf")
    return log_probs


@torch.inference_mode()
def greedy_search(model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, *,
                  alpha: float = 0.0, max_length_ratio: float = 2.0,
                  keep_attention: bool = True) -> list[list[Hypothesis]]:
    """The most probable next token at every step; one hypothesis per sentence.

    The same hypotheses as beam_search with beam_size 1 (tests/decoding/test_search.py holds the
    two to that), in a function of its own because it is the cheap path: one max per step and no
    candidates, finished pool or beam bookkeeping. The word reward and the coverage penalty
    change nothing here: they rank hypotheses, and there is only one."""
    batch, device = src.size(0), src.device
    memory = model.encode(src, src_lengths)
    state = model.init_state(memory)
    max_lengths = max_output_lengths(src_lengths, max_length_ratio).to(device)  # (B,)
    limit = int(max_lengths.max())
    out_tokens = torch.full((batch, limit), PAD_ID, dtype=torch.long, device=device)  # (B, L)
    out_steps = torch.zeros(batch, dtype=torch.long, device=device)  # (B,) steps incl. </s>
    out_log_probs = torch.zeros(batch, device=device)  # (B,)
    out_attention = None  # (B, L, S), made at the first step that has weights

    active = torch.arange(batch, device=device)  # (A,) sentences still decoding
    prev = torch.full((batch,), BOS_ID, dtype=torch.long, device=device)  # (A,)
    log_prob = torch.zeros(batch, device=device)  # (A,)
    for t in range(limit):
        log_probs, state, weights = model.decode_step(prev, state, memory)  # (A, V), (A, S)
        best, token = _forbid_specials(log_probs, t).max(dim=1)  # (A,), (A,)
        log_prob = log_prob + best
        out_tokens[active, t] = token
        if keep_attention and weights is not None:
            if out_attention is None:
                out_attention = weights.new_zeros(batch, limit, src.size(1))  # (B, L, S)
            out_attention[active, t] = weights
        done = (token == EOS_ID) | (t + 1 >= max_lengths)  # (A,)
        if done.any():
            out_steps[active[done]] = t + 1
            out_log_probs[active[done]] = log_prob[done]
            if done.all():
                break
            keep = (~done).nonzero().squeeze(1)  # (A',)
            active, max_lengths = active[keep], max_lengths[keep]
            log_prob, token = log_prob[keep], token[keep]
            memory, state = memory.select(keep), state.select(keep)
        prev = token

    scores = (out_log_probs / length_penalty(out_steps.float(), alpha)).tolist()  # B floats
    tokens, steps = out_tokens.tolist(), out_steps.tolist()
    log_probs_list = out_log_probs.tolist()
    attention = None if out_attention is None else out_attention.float().cpu().numpy()
    lengths = src_lengths.tolist()
    results = []
    for i in range(batch):
        ended = steps[i] > 0 and tokens[i][steps[i] - 1] == EOS_ID
        n_tokens = steps[i] - 1 if ended else steps[i]
        weights = None if attention is None else attention[i, : steps[i], : lengths[i]].copy()
        results.append([Hypothesis(tokens[i][:n_tokens], scores[i], log_probs_list[i], ended, weights)])
    return results


@torch.inference_mode()
def beam_search(model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, *, beam_size: int,
                n_best: int = 1, alpha: float = 0.0, word_reward: float = 0.0,
                coverage_penalty: float = 0.0, stop: str = "best_ended",
                max_length_ratio: float = 2.0, keep_attention: bool = True
                ) -> list[list[Hypothesis]]:
    """Beam search over all sentences and beams at once; see the module docstring for the rules."""
    if not 1 <= n_best <= beam_size:
        raise NMTError(f"search.n_best ({n_best}) must be between 1 and search.beam_size ({beam_size})")
    beams = Beams.start(model, src, src_lengths, beam_size, alpha, max_length_ratio,
                        Scoring(word_reward, coverage_penalty))
    pool = FinishedPool(src.size(0), n_best, alpha, src.device)
    for t in range(int(beams.max_lengths.max())):
        log_probs = beams.decode_step(model, keep_attention)
        best = beams.best_candidates(log_probs, t)
        beams.finish_ended(best, pool, t)
        beams.advance(best)
        beams.finish_at_max_length(pool, t)
        done = beams.done(best, pool, n_best, t, stop)
        if done.all():
            break
        if done.any():
            beams.drop(done, pool)
    return pool.results(src_lengths.tolist())


@dataclass
class Scoring:
    """What a hypothesis's score adds to its normalized log-probability (module docstring)."""

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
        row_best, row_tokens = _forbid_specials(log_probs, t).topk(2 * k, dim=1)  # (A*W, 2K)
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


def replace_unknowns(tokens: list[str], ids: list[int], attention, src_tokens: list[str]
                     ) -> list[str]:
    """Each <unk> in the output becomes the source token attended most when it was produced.

    Names and numbers the target vocabulary lacks (`汤姆` is known, `Zhang` may not be) often pass
    through unchanged this way (Luong et al., 2015). Without attention the tokens stay as they are.
    """
    if attention is None or not src_tokens:
        return list(tokens)
    attention = np.asarray(attention)  # (T, S)
    return [src_tokens[int(attention[i].argmax())] if ids[i] == UNK_ID and i < len(attention)
            else token for i, token in enumerate(tokens)]
