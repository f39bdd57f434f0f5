"""Searching with a CTranslate2 model folder (nmt/export/ctranslate2_spec.py) instead of PyTorch:
source ids in, n-best hypotheses out, in input order, as nmt.decoding.translate.decode_ids.

How CT2's search (src/decoding.cc, 4.8) is made to match ours (nmt/decoding/search.py):

- Outputs: </s> may not come first (min_decoding_length=1), <pad> and <s> never come
  (suppress_sequences), as in our forbid_specials; return_end_token keeps </s> and the
  attention row of its step: an ended hypothesis has len(tokens) + 1 rows, as ours.
- Maximum length: CT2 takes one max_decoding_length per call (steps, </s> included, as ours);
  ours is per sentence, ceil(ratio × source length) + 10, so the batches group sentences of
  one limit. At the limit ours ends the K best open hypotheses, CT2 the K best candidates:
  the same unless an </s> is among them.
- Log-probabilities: CT2 masks the forbidden tokens before its softmax, ours after, so CT2's
  are renormalized over the allowed tokens (slightly higher, most at the first step, where
  </s> is forbidden). With exact_scores (the default) the returned hypotheses are rescored by
  teacher forcing (score_batch, a plain log-softmax): log_prob is then ours to ~1e-6.
- Scores and length penalty: CT2's score is the log-probability over steps ** alpha, our GNMT
  penalty is ((5 + steps) / 6) ** alpha: they differ unless alpha is 0, so our alpha is never
  passed on. CT2's normalization is undone and Hypothesis.score is ours: log_prob over our
  penalty, plus, in beam search, our word reward and coverage penalty (CT2 has no reward and
  applies coverage to finished hypotheses only: here both rank what CT2 found, they do not
  steer its beam as they steer ours). The n-best list is ranked by that score.
- Stopping: both beams keep candidates by log-probability alone, so the length penalty CT2 is
  given only decides when it stops and which finished hypotheses it returns. Our beam_full
  (stop once K have finished) is CT2's rule with any penalty but 0 (patience 1): it is given a
  negligible one and returns all K, ranked again by our score. Our best_ended (stop when the
  step's best candidate ends) has no CT2 option; CT2 stops so by itself when its penalty is 0
  (once its top beam has ended and num_hypotheses have finished): with our alpha 0 it is
  asked for n_best, which is ours exactly; with alpha > 0 for all K (it then searches on
  until K have finished, a superset of ours, which our score ranks).
- Attention: the alignment layer's heads averaged, over the real source tokens, as ours.
  CT2's beam search on the CPU runs its first step unexpanded and gathers that step's attention
  with unexpanded indices, so in a batch of several sentences a hypothesis's first row is
  another sentence's; the first row, the same for every hypothesis of a sentence (all start
  from <s>), is taken from a one-step greedy pass instead.
- Greedy: beam_size 1 is CT2's greedy search (sampling_topk=1), scored like ours.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import ctranslate2
import numpy as np
import torch

from nmt.config.schema import SearchConfig
from nmt.data.vocab import BOS, EOS, PAD, Vocab
from nmt.decoding.hypothesis import Hypothesis, length_penalty
from nmt.errors import NMTError
from nmt.export.ctranslate2_spec import POSITION_ROWS
from nmt.model import MAX_SOURCE_TOKENS


def max_steps(source_length: int, search: SearchConfig) -> int:
    """Our search's decoding steps for a source (nmt/decoding/output_rules.py, </s> included),
    within the exported position table, which CT2 raises past; one row is left for the </s>
    that rescoring (score_batch) appends to an output cut at the limit."""
    return min(math.ceil(source_length * search.max_length_ratio) + 10, POSITION_ROWS - 1)


def limit_batches(src_ids: list[list[int]], search: SearchConfig) -> list[tuple[list[int], int]]:
    """The non-empty sentences' indices, longest first, in batches of at most search.batch_size
    that share one maximum output length, each with that length."""
    by_limit: dict[int, list[int]] = {}
    order = sorted((i for i, ids in enumerate(src_ids) if len(ids)), key=lambda i: -len(src_ids[i]))
    for i in order:
        by_limit.setdefault(max_steps(min(len(src_ids[i]), MAX_SOURCE_TOKENS), search), []).append(i)
    size = search.batch_size
    return [(group[start:start + size], limit) for limit, group in by_limit.items()
            for start in range(0, len(group), size)]


def coverage_term(attention: np.ndarray, beta: float) -> float:
    """β Σ_j log min(Σ_i a_ij, 1), a_ij (T, S) over the real source tokens: our coverage penalty
    (nmt/decoding/beam_state.py's Scoring), a never-attended token floored at 1e-6."""
    covered = np.clip(attention.sum(axis=0), 1e-6, 1.0)  # (S,)
    return beta * float(np.log(covered).sum())


class EngineSearch:
    """A CTranslate2 Translator on the CPU, searching as nmt.decoding.translate.decode_ids.

    `exact_scores`: rescore the returned hypotheses by teacher forcing (score_batch), so that
    log_prob is ours exactly (see the module docstring); off, it is CT2's search's own,
    renormalized over the tokens allowed at each step, and the search is that much cheaper."""

    def __init__(self, folder: Path, compute_type: str = "default", threads: int | None = None,
                 exact_scores: bool = True, workers: int = 1):
        self.folder, self.exact_scores = Path(folder), exact_scores
        if not self.folder.is_dir():
            raise NMTError(f"{self.folder}: no such CTranslate2 model folder; export the model first")
        # search.workers as CT2 has it: `workers` batches searched side by side (inter_threads),
        # the threads shared among them (intra_threads), as nmt/decoding/workers.py forks ours
        torch_threads = torch.get_num_threads()
        threads = threads or torch_threads
        self.workers = max(1, min(workers or threads, threads))
        try:
            self.translator = ctranslate2.Translator(
                str(self.folder), device="cpu", compute_type=compute_type,
                intra_threads=max(1, threads // self.workers), inter_threads=self.workers)
            # CT2 sets this thread's OpenMP threads to its intra_threads, which torch shares:
            # give torch back its own (its workers set theirs in their own threads)
            torch.set_num_threads(torch_threads)
        except (RuntimeError, ValueError) as error:
            raise NMTError(f"{self.folder}: not a usable CTranslate2 model folder ({error}); "
                           f"export the model again") from None

    def search(self, src_ids: list[list[int]], search: SearchConfig, src_vocab: Vocab,
               tgt_vocab: Vocab, keep_attention: bool,
               progress: Callable[[int], None] | None = None) -> list[list[Hypothesis]]:
        """Per sentence of `src_ids` (source ids, no <s>/</s>) its n-best list, best first, in
        input order; an empty sentence gets one empty hypothesis without running the engine.
        Sources are cut to MAX_SOURCE_TOKENS, as ours. `progress(n)` after each batch of n."""
        if not 1 <= search.n_best <= search.beam_size:
            raise NMTError(f"search.n_best ({search.n_best}) must be between 1 and "
                           f"search.beam_size ({search.beam_size})")
        results: list[list[Hypothesis] | None] = [
            None if len(ids) else [Hypothesis([], 0.0, 0.0, True, None)] for ids in src_ids]
        batches = [(batch, limit, [[src_vocab.itos[i] for i in src_ids[k][:MAX_SOURCE_TOKENS]]
                                   for k in batch]) for batch, limit in limit_batches(src_ids, search)]
        # every batch queued at once: the engine's workers take them in turn
        pending = [self._run(self.translator.translate_batch, sources, asynchronous=True,
                             **_options(search, limit, keep_attention))
                   for _, limit, sources in batches]
        for (batch, _, sources), queued in zip(batches, pending):
            found = self._read_batch(sources, [self._run(q.result) for q in queued], search,
                                     tgt_vocab, keep_attention)
            for k, hyps in zip(batch, found):
                results[k] = hyps
            if progress is not None:
                progress(len(batch))
        return results  # type: ignore[return-value]  # every None was filled

    def _run(self, method: Callable, *args, **options) -> list:
        """A Translator method; CT2's errors as an NMTError naming the folder."""
        try:
            return method(*args, **options)
        except (RuntimeError, ValueError) as error:
            raise NMTError(f"{self.folder}: the CTranslate2 search failed: {error}") from None

    def _read_batch(self, sources: list[list[str]], found: list, search: SearchConfig,
                    tgt_vocab: Vocab, keep_attention: bool) -> list[list[Hypothesis]]:
        """One batch's source tokens and CT2's results for them → their n-best lists."""
        first_rows = None
        if found and found[0].attention and search.beam_size > 1:
            first_rows = self._first_rows(sources)
        nbest = []
        for k, result in enumerate(found):
            hyps = [_hypothesis(tokens, result.scores[h],
                                result.attention[h] if result.attention else None,
                                search, tgt_vocab) for h, tokens in enumerate(result.hypotheses)]
            for hyp in hyps:
                if first_rows is not None and hyp.attention is not None:
                    hyp.attention[0] = first_rows[k]  # CT2's beam gives another sentence's
                hyp.score = _score(hyp, search)
            nbest.append(sorted(hyps, key=lambda hyp: -hyp.score)[: search.n_best])
        if self.exact_scores:
            self._rescore(sources, nbest, search, tgt_vocab)
        if not keep_attention:  # it was asked for the coverage penalty only
            for hyp in (hyp for hyps in nbest for hyp in hyps):
                hyp.attention = None
        return nbest

    def _first_rows(self, sources: list[list[str]]) -> list[np.ndarray]:
        """Each sentence's attention at the first step (S,), the same for all its hypotheses
        (all start from <s>), from a one-step greedy pass: CT2's beam search on the CPU runs its
        first step unexpanded and gathers that step's attention with unexpanded indices, so a
        hypothesis's first row is another sentence's in a batch of several (CT2 4.8)."""
        found = self._run(self.translator.translate_batch, sources, beam_size=1,
                          max_decoding_length=1, max_input_length=0, return_attention=True)
        return [np.asarray(result.attention[0][0], dtype=np.float32) for result in found]

    def _rescore(self, sources: list[list[str]], nbest: list[list[Hypothesis]],
                 search: SearchConfig, tgt_vocab: Vocab) -> None:
        """log_prob and score of every hypothesis as ours: CT2's teacher-forced log-probabilities
        (score_batch: a plain log-softmax, </s> appended), the n-best lists sorted again."""
        pairs = [(sources[k], hyp) for k, hyps in enumerate(nbest) for hyp in hyps]
        scored = self._run(self.translator.score_batch, [source for source, _ in pairs],
                           [[tgt_vocab.itos[i] for i in hyp.tokens] for _, hyp in pairs],
                           max_input_length=0)
        for (_, hyp), result in zip(pairs, scored):
            hyp.log_prob = float(sum(result.log_probs[: len(hyp.tokens) + hyp.ended]))
            hyp.score = _score(hyp, search)
        for hyps in nbest:
            hyps.sort(key=lambda hyp: -hyp.score)


# CT2 stops a sentence early (once its top beam has ended and num_hypotheses are finished) only
# when its length penalty is exactly 0; this one turns that off and ranks as 0 does.
NEGLIGIBLE_PENALTY = 1e-6


def engine_alpha(search: SearchConfig) -> float:
    """The length penalty CT2 is given, chosen for when CT2 stops (module docstring): 0 for
    best_ended, a negligible one for beam_full. CT2 divides by steps ** alpha, ours by
    ((5 + steps) / 6) ** alpha, so ours is never passed on: _hypothesis undoes CT2's and
    _score applies ours."""
    if search.beam_size == 1:
        return search.length_penalty  # greedy search stops at </s> whatever the penalty
    return 0.0 if search.stop == "best_ended" else NEGLIGIBLE_PENALTY


def engine_hypotheses(search: SearchConfig) -> int:
    """CT2's num_hypotheses: what it returns, and with a length penalty of 0, when it stops."""
    if search.beam_size == 1:
        return 1
    if search.stop == "best_ended" and search.length_penalty == 0:
        return search.n_best  # CT2 stops when our best_ended does, and ranks as we do
    return search.beam_size  # all CT2 keeps, ranked again by our score


def _options(search: SearchConfig, limit: int, keep_attention: bool) -> dict:
    """translate_batch's keyword arguments for one batch whose outputs get `limit` steps."""
    return dict(
        beam_size=search.beam_size,
        sampling_topk=1,  # no sampling: beam_size 1 is greedy search
        num_hypotheses=engine_hypotheses(search),
        length_penalty=engine_alpha(search),
        max_decoding_length=limit,
        min_decoding_length=1,  # no </s> first: never an empty translation, as ours
        suppress_sequences=[[PAD], [BOS]],  # never outputs, as ours
        max_input_length=0,  # sources were cut to MAX_SOURCE_TOKENS already
        return_end_token=True,  # keep </s> and the attention row of its step
        return_scores=True,
        return_attention=keep_attention or (search.coverage_penalty > 0 and search.beam_size > 1))


def _hypothesis(tokens: list[str], engine_score: float, attention: list | None,
                search: SearchConfig, tgt_vocab: Vocab) -> Hypothesis:
    """One CT2 output (</s> kept when produced) as our Hypothesis; its score is set later."""
    ended = bool(tokens) and tokens[-1] == EOS
    steps = len(tokens)  # decoding steps, </s> included when it was produced
    log_prob = engine_score * steps ** engine_alpha(search)  # undo CT2's normalization
    weights = None if attention is None else np.array(attention, dtype=np.float32)  # (steps, S)
    return Hypothesis(tgt_vocab.encode(tokens[:-1] if ended else tokens), 0.0, log_prob, ended,
                      weights)


def _score(hyp: Hypothesis, search: SearchConfig) -> float:
    """Our score (nmt/decoding/search.py): log_prob over the GNMT penalty; beam search adds the
    word reward and the coverage penalty, greedy search neither (it ranks nothing)."""
    steps = len(hyp.tokens) + hyp.ended
    score = hyp.log_prob / length_penalty(float(steps), search.length_penalty)
    if search.beam_size > 1:
        score += search.word_reward * steps
        if search.coverage_penalty > 0 and hyp.attention is not None:
            score += coverage_term(hyp.attention, search.coverage_penalty)
    return score
