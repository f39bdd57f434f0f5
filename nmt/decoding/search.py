"""Decoding: from a batch of source sentences to the best target sequences.

`search` is the one entry point: greedy search for beam size 1, beam search otherwise. Both work
on the whole batch at once; the only Python loop is over time steps. Sentences that are done
leave the batch, so the last steps run on the few long sentences only.

Scores are GNMT-normalized (Wu et al., 2016): score = log P(y|x) / lp(|y|), with
lp(l) = ((5 + l) / 6) ** alpha and l counting every decoding step, </s> included. alpha = 0 ranks
by plain log-probability; larger alphas favour longer outputs.

Beam search (batched over sentences × beams, K = beam size):
- each step expands the K open hypotheses of each sentence and takes the 2K best candidates; a
  candidate ending in </s> among the best K is finished and kept; the best K that do not end
  in </s> form the next beam, so the beam always holds K open hypotheses;
- a sentence is done, once it has n_best finished hypotheses, when the best candidate of the
  step ends in </s> (as in OpenNMT and Joey NMT; with K = 1 this is exactly greedy search), or
  earlier, when no open hypothesis can still beat the n-th best finished one; and at its maximum
  output length, where the open hypotheses end without </s>.
- The early stop is sound: log-probabilities only fall, and the length penalty can at most grow
  to lp(max length), so an open hypothesis with log-probability s never scores above
  s / lp(max length). With alpha = 0 the first rule is sound for the best hypothesis (every open
  one is already below it); with alpha > 0 it is the usual heuristic, since a longer
  hypothesis could still overtake after normalization.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from nmt.config.schema import SearchConfig
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmt.decoding.finished import FinishedPool
from nmt.decoding.hypothesis import Hypothesis, length_penalty
from nmt.errors import NMTError


def max_output_lengths(src_lengths: Tensor, ratio: float) -> Tensor:
    """ceil(ratio * source length) + 10 decoding steps per sentence, </s> included."""
    return torch.ceil(src_lengths.double() * ratio).long() + 10  # (B,)


@torch.inference_mode()
def search(model, src: Tensor, src_lengths: Tensor, config: SearchConfig,
           keep_attention: bool = True) -> list[list[Hypothesis]]:
    """src (B, S) padded with PAD_ID, src_lengths (B,) → per sentence its n-best list, best first.

    The model must be in eval mode (dropout off); `nmt.decoding.translate` takes care of that.
    """
    if config.n_best > config.beam_size:
        raise NMTError(f"search.n_best ({config.n_best}) must be <= search.beam_size "
                       f"({config.beam_size}): a beam of K keeps at most K hypotheses")
    if config.beam_size == 1:
        return greedy_search(model, src, src_lengths, config.max_length_ratio,
                             config.length_penalty, keep_attention)
    return beam_search(model, src, src_lengths, config.beam_size, config.n_best,
                       config.length_penalty, config.max_length_ratio, keep_attention)


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
def greedy_search(model, src: Tensor, src_lengths: Tensor, max_length_ratio: float = 2.0,
                  alpha: float = 0.0, keep_attention: bool = True) -> list[list[Hypothesis]]:
    """The most probable next token at every step; one hypothesis per sentence."""
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

    scores = out_log_probs / length_penalty(out_steps.float(), alpha)  # (B,)
    tokens, steps = out_tokens.tolist(), out_steps.tolist()
    scores, log_probs_list = scores.tolist(), out_log_probs.tolist()
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
def beam_search(model, src: Tensor, src_lengths: Tensor, beam_size: int, n_best: int = 1,
                alpha: float = 0.0, max_length_ratio: float = 2.0,
                keep_attention: bool = True) -> list[list[Hypothesis]]:
    """Beam search over all sentences and beams at once; see the module docstring for the rules."""
    if not 1 <= n_best <= beam_size:
        raise NMTError(f"search.n_best ({n_best}) must be between 1 and search.beam_size ({beam_size})")
    beams = Beams.start(model, src, src_lengths, beam_size, alpha, max_length_ratio)
    pool = FinishedPool(src.size(0), n_best, alpha, src.device)
    for t in range(int(beams.max_lengths.max())):
        log_probs = beams.decode_step(model, keep_attention)
        best = beams.best_candidates(log_probs, t)
        beams.finish_ended(best, pool, t)
        beams.advance(best)
        beams.finish_at_max_length(pool, t)
        done = beams.done(best, pool, n_best, t)
        if done.all():
            break
        if done.any():
            beams.drop(done, pool)
    return pool.results(src_lengths.tolist())


@dataclass
class Candidates:
    """The 2K best continuations of each active sentence, best first."""

    scores: Tensor  # (A, 2K) log-probabilities
    tokens: Tensor  # (A, 2K)
    rows: Tensor  # (A, 2K) the row of the (A*W, ...) tensors each one extends
    is_eos: Tensor  # (A, 2K): at most W of them, one per beam


@dataclass
class Beams:
    """The open hypotheses of the sentences still searching: A sentences of W rows each.

    The first step expands the one <s> hypothesis per sentence (W = 1); the K best of its
    continuations fill the beam, and from then on each sentence has K rows (W = K)."""

    k: int
    active: Tensor  # (A,) sentence ids still searching
    max_lengths: Tensor  # (A,) decoding steps allowed, </s> included
    best_penalty: Tensor  # (A,) the largest length penalty a hypothesis can get
    memory: object  # the encoder's output, one row per hypothesis once W = K
    state: object  # the decoder state, (A*W) rows
    scores: Tensor  # (A, W) log-probabilities of the open hypotheses
    prev: Tensor  # (A*W,) their last tokens
    history: Tensor  # (A*W, t) tokens so far
    attention: Tensor | None = None  # (A*W, t, S) weights so far, when kept
    width: int = 1

    @classmethod
    def start(cls, model, src: Tensor, src_lengths: Tensor, k: int, alpha: float,
              max_length_ratio: float) -> Beams:
        batch, device = src.size(0), src.device
        memory = model.encode(src, src_lengths)
        max_lengths = max_output_lengths(src_lengths, max_length_ratio).to(device)  # (B,)
        prev = torch.full((batch,), BOS_ID, dtype=torch.long, device=device)  # (B,)
        return cls(k, torch.arange(batch, device=device), max_lengths,
                   length_penalty(max_lengths.float(), alpha), memory, model.init_state(memory),
                   torch.zeros(batch, 1, device=device), prev, prev.new_empty(batch, 0))

    def decode_step(self, model, keep_attention: bool) -> Tensor:
        """One decoder step for every open hypothesis → log-probs (A*W, V)."""
        log_probs, self.state, weights = model.decode_step(self.prev, self.state, self.memory)
        vocab = log_probs.size(1)
        if vocab < 2 * self.k:
            raise NMTError(f"search.beam_size {self.k} needs at least {2 * self.k} target tokens; "
                           f"the vocabulary has {vocab}")
        if keep_attention and weights is not None:
            step_weights = weights.unsqueeze(1)  # (A*W, 1, S)
            self.attention = (step_weights if self.attention is None
                              else torch.cat([self.attention, step_weights], 1))
        return log_probs

    def best_candidates(self, log_probs: Tensor, t: int) -> Candidates:
        # The 2K best of all W*V continuations are among each beam's own 2K best tokens, so
        # the score is added to those only, not to the whole (A*W, V) table.
        n_active, k, width = self.active.numel(), self.k, self.width
        row_best, row_tokens = _forbid_specials(log_probs, t).topk(2 * k, dim=1)  # (A*W, 2K)
        candidates = (self.scores.view(-1, 1) + row_best).view(n_active, width * 2 * k)
        top_scores, top_index = candidates.topk(2 * k, dim=1)  # (A, 2K) best first
        tokens = row_tokens.view(n_active, width * 2 * k).gather(1, top_index)  # (A, 2K)
        rows = top_index // (2 * k) + (torch.arange(n_active, device=tokens.device) * width).unsqueeze(1)
        return Candidates(top_scores, tokens, rows, tokens == EOS_ID)

    def finish_ended(self, best: Candidates, pool: FinishedPool, t: int) -> None:
        """Candidates ending in </s> among the best K are finished: history + </s>."""
        k = self.k
        ended = best.is_eos[:, :k] & (best.scores[:, :k] > float("-inf"))  # (A, K)
        if ended.any():
            pool.add(self.active, ended, best.rows[:, :k], best.scores[:, :k], self.history,
                     self.attention, t + 1)

    def advance(self, best: Candidates) -> None:
        """The best K candidates that go on form the next beam (a stable sort keeps score order)."""
        k, n_active = self.k, self.active.numel()
        keep = best.is_eos.to(torch.uint8).argsort(dim=1, stable=True)[:, :k]  # (A, K)
        self.scores = best.scores.gather(1, keep)  # (A, K)
        alive_rows = best.rows.gather(1, keep).view(-1)  # (A*K,)
        self.prev = best.tokens.gather(1, keep).view(-1)  # (A*K,)
        self.history = torch.cat([self.history[alive_rows], self.prev.unsqueeze(1)], dim=1)
        self.attention = None if self.attention is None else self.attention[alive_rows]
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
            pool.add(self.active, cut, own_rows, self.scores, self.history, self.attention, t + 1)

    def done(self, best: Candidates, pool: FinishedPool, n_best: int, t: int) -> Tensor:
        """(A,) sentences done: at their maximum length, or with n_best finished and either the
        step's best candidate ending in </s> or no open hypothesis able to beat the n-th best
        (its best possible final score: its log-prob over the largest penalty)."""
        at_max = t + 1 >= self.max_lengths  # (A,)
        bound = self.scores.max(dim=1).values / self.best_penalty  # (A,)
        return at_max | ((pool.count >= n_best) & (best.is_eos[:, 0] | (pool.nth_best >= bound)))

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
