"""Distilling a trained run (`distill.teacher`): the student learns what the teacher says.

As Mozilla's Firefox Translations pipeline distils its students, the teacher is the whole
decoding the teacher run's `make eval` uses (its ensemble, averaged checkpoints, channel
reranking and tuned search: nmt/decoding/plan.py), not one checkpoint:

1. it translates every training source into an n-best list (`distill.n_best`);
2. one hypothesis per source is kept (`distill.pick`): the teacher's own best, or the one
   closest to the reference by sentence chrF;
3. the worst `distill.drop_worst` share of the kept ones, by the teacher's channel model
   (log p(source | translation) per source token), is left out: a line is then empty, which
   training skips (its reference stays with `distill.with_gold`).

The lines are cached beside the prepared data as training.distill_from's are
(nmt/training/distill.py), under a hash of everything they depend on: the data, the teacher's
checkpoint files (their content), its search and rescoring weights, and the three keys above.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from pathlib import Path

import numpy as np
import torch
from sacrebleu.metrics import CHRF
from tqdm import tqdm

from nmt.config.schema import Config, differing_data_keys
from nmt.data.cache import MANIFEST, building, record_files
from nmt.data.prepare import PreparedData
from nmt.data.subword import merge_pieces
from nmt.data.vocab import Vocab
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.plan import DecodingPlan, materialize, run_plan
from nmt.errors import NMTError
from nmt.io import atomic_write_json, atomic_write_lines, read_lines
from nmt.model import MAX_SOURCE_TOKENS
from nmt.training.distill import DISTILL_DIR, TARGETS, is_current

log = logging.getLogger(__name__)


def teacher_plan(config: Config, device: torch.device | str) -> DecodingPlan:
    """The teacher run's decoding plan, returning distill.n_best hypotheses per sentence."""
    folder = Path(config.distill.teacher or "")
    if not (folder / "config.yaml").is_file():
        raise NMTError(f"distill.teacher: {folder} is not a trained run folder (no config.yaml); "
                       f"train the teacher first (`make train`)")
    # the student's stage materializes its teacher's averages, as the teacher's make eval would
    plan = materialize(run_plan(folder, "cuda" if torch.device(device).type == "cuda" else "cpu"))
    differ = differing_data_keys(config.data, plan.config.data)
    if differ:
        raise NMTError(f"distill.teacher: {folder} was trained on other data settings than this "
                       f"run ({', '.join('data.' + k for k in differ)} differ); a teacher must "
                       f"read and write the same tokens as its student")
    n_best = min(config.distill.n_best, plan.search.beam_size)
    return plan.with_search(n_best=n_best, replace_unk=False)


def run_distilled_targets(config: Config, prepared: PreparedData,
                          device: torch.device | str = "cpu") -> Path:
    """The teacher run's chosen translation of every training source, one line per training
    line ("" where left out): made now, or found in the cache."""
    plan = teacher_plan(config, device)
    key = _cache_key(config, plan)
    folder = prepared.dir / DISTILL_DIR / hashlib.sha256(
        json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    gold = read_lines(prepared.tokens("train", "en"))
    if is_current(folder, len(gold)):
        log.info("distilled targets already in %s", folder / TARGETS)
        return folder / TARGETS
    start = time.perf_counter()
    lines, counts = _translate(config, plan, prepared, gold)
    with building(folder) as partial:  # renamed onto `folder` once complete
        atomic_write_lines(partial / TARGETS, lines)
        atomic_write_json(partial / MANIFEST, {
            **key, "teacher": config.distill.teacher, "sentences": len(lines), **counts,
            "seconds": round(time.perf_counter() - start, 2), "files": record_files(partial)})
    log.info("distilled %d training targets from %s in %.1f s into %s (%d left out)",
             counts["translated"], config.distill.teacher, time.perf_counter() - start,
             folder / TARGETS, counts["dropped_worst"])
    return folder / TARGETS


def _cache_key(config: Config, plan: DecodingPlan) -> dict:
    """Everything the distilled lines depend on."""
    search = dataclasses.asdict(plan.search)
    for neutral in ("workers", "batch_size"):  # how fast, not what
        search.pop(neutral)
    # the teacher by content alone: the same run reached by another spelling of its path (or
    # copied elsewhere) hits the same cache
    return {"data_hash": config.data_hash(), "checkpoints": list(plan.checkpoint_sha256),
            "rescoring": [[m.sha256, m.weight] for m in plan.rescoring],
            "search": search, "pick": config.distill.pick, "drop_worst": config.distill.drop_worst}


def _translate(config: Config, plan: DecodingPlan, prepared: PreparedData, gold: list[str]
               ) -> tuple[list[str], dict]:
    """The teacher's kept line per training source (else its reference) and the counts."""
    from nmt.decoding.rerank import Reranker  # the decoding stack loads after training's
    from nmt.decoding.translator import Translator

    translator = Translator.from_plan(plan, keep_attention=False)
    if config.distill.drop_worst and translator.reranker is not None:
        # every rescorer reads every candidate, a channel model of weight 0 too: drop_worst
        # ranks by its score whatever weight the teacher's own choice gives it
        translator = translator.with_reranker(Reranker(translator.reranker.rescorers, score_all=True))
    _check_vocabularies(config, prepared, translator.src_vocab, translator.tgt_vocab)
    sources = [line.split() for line in read_lines(prepared.tokens("train", "zh"))]
    todo = [i for i, tokens in enumerate(sources) if 0 < len(tokens) <= MAX_SOURCE_TOKENS]
    log.info("distillation: the teacher %s translates %d training sentences (beam %d, %d-best)",
             config.distill.teacher, len(todo), plan.search.beam_size, plan.search.n_best)
    bar = tqdm(total=len(todo), unit="sent", desc="distill", dynamic_ncols=True, disable=None)
    found = translator.decode([translator.src_vocab.encode(sources[i]) for i in todo],
                              progress=bar.update)
    bar.close()
    channel = next((k for k, model in enumerate(plan.rescoring) if model.channel), None)
    if config.distill.drop_worst and channel is None:
        raise NMTError(f"distill.drop_worst ranks the teacher's translations by its channel "
                       f"model, but {config.distill.teacher} decodes with none "
                       f"(training.channel_members, and eval.channel_weight > 0 or a channel "
                       f"model in eval.rerank); set distill.drop_worst=0")
    picked = [_pick(hyps, gold[i], config.distill.pick, translator.tgt_vocab)
              for i, hyps in zip(todo, found)]
    adequacy = np.array([hyp.rescores[channel] / len(sources[i]) if channel is not None
                         and hyp.rescores else 0.0 for i, hyp in zip(todo, picked)])
    cut = np.quantile(adequacy, config.distill.drop_worst) if config.distill.drop_worst else -np.inf
    lines, dropped = list(gold), 0
    for i, hyp, score in zip(todo, picked, adequacy):
        tokens = translator.tgt_vocab.decode(hyp.tokens)
        if score < cut:
            lines[i], dropped = "", dropped + 1
        elif tokens:
            lines[i] = " ".join(tokens)
    return lines, {"translated": len(todo), "dropped_worst": dropped,
                   "not_the_teachers_best": sum(h is not hs[0] for h, hs in zip(picked, found)),
                   "gold_sources_skipped": len(sources) - len(todo)}


def _pick(hyps: list[Hypothesis], reference: str, rule: str, vocab: Vocab) -> Hypothesis:
    """The hypothesis kept: the teacher's best, or the closest to the reference by sentence
    chrF (on words: pieces merged; the first of equals, so the teacher's order breaks ties)."""
    if rule == "score" or len(hyps) == 1:
        return hyps[0]
    ref = [" ".join(merge_pieces(reference.split()))]
    chrf = [CHRF().sentence_score(" ".join(merge_pieces(vocab.decode(hyp.tokens))), ref).score
            for hyp in hyps]
    return hyps[int(np.argmax(chrf))]


def _check_vocabularies(config: Config, prepared: PreparedData, src: Vocab, tgt: Vocab) -> None:
    for side, lang, theirs in (("source", "zh", src), ("target", "en", tgt)):
        if Vocab.load(prepared.vocab(lang)).itos != theirs.itos:
            raise NMTError(f"distill.teacher: {config.distill.teacher} has another {side} "
                           f"vocabulary than {prepared.vocab(lang)}; a teacher must be trained "
                           f"on this run's prepared data")
