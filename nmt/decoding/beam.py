"""Beam search, batched over sentences × beams (K = beam size); scores as in
nmt/decoding/search.py's docstring, the state and its steps in nmt/decoding/beam_state.py.

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

import torch
from torch import Tensor

from nmt.config.schema import SearchConfig
from nmt.decoding.beam_state import Beams, Scoring
from nmt.decoding.finished import FinishedPool
from nmt.decoding.hypothesis import Hypothesis
from nmt.errors import NMTError
from nmt.model.interface import M, S, StepDecoder


@torch.inference_mode()
def beam_search(model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, *, config: SearchConfig,
                keep_attention: bool = True) -> list[list[Hypothesis]]:
    """Beam search over all sentences and beams at once, as `config` says (beam_size, n_best,
    length_penalty: alpha, word_reward, coverage_penalty, stop, max_length_ratio); see the module
    docstring for the rules."""
    beam_size, n_best, alpha = config.beam_size, config.n_best, config.length_penalty
    if not 1 <= n_best <= beam_size:
        raise NMTError(f"search.n_best ({n_best}) must be between 1 and search.beam_size ({beam_size})")
    beams = Beams.start(model, src, src_lengths, beam_size, alpha, config.max_length_ratio,
                        Scoring(config.word_reward, config.coverage_penalty))
    pool = FinishedPool(src.size(0), n_best, alpha, src.device)
    for t in range(int(beams.max_lengths.max())):
        log_probs = beams.decode_step(model, keep_attention)
        best = beams.best_candidates(log_probs, t)
        beams.finish_ended(best, pool, t)
        beams.advance(best)
        beams.finish_at_max_length(pool, t)
        done = beams.done(best, pool, n_best, t, config.stop)
        if done.all():
            break
        if done.any():
            beams.drop(done, pool)
    return pool.results(src_lengths.tolist())
