"""make tune: the search settings chosen on the dev split, never on test.

With the models `make eval` would score (members, averages, eval.rerank's rescorers), the dev
split is translated once per setting tried, one key at a time (coordinate ascent: each key's
values are tried with the best values found so far for the others):

1. search.stop, length_penalty, coverage_penalty, word_reward: a beam search each;
2. eval.rerank_weights, one rescorer at a time, on the n-best lists of the chosen search: the
   rescorers read every candidate once, and each weight only recombines their scores.

Every setting tried is printed with its dev BLEU and length ratio. The best goes into
runs/<name>/search.tuned.yaml (nmt/config/tuned.py), which `make eval`, `make translate`,
`make serve` and `Translator.from_run` then use.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable

import sacrebleu
import torch
import yaml

from nmt.config.schema import Config, SearchConfig
from nmt.config.tuned import TUNED_SEARCH_KEYS, tuned_path
from nmt.data.prepare import load_prepared
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.rerank import combine
from nmt.decoding.translate import decode_ids
from nmt.decoding.translator import Translator
from nmt.evaluation.evaluate import read_split
from nmt.io import atomic_write_text

log = logging.getLogger(__name__)

# The values tried for each search key, in the order the keys are tuned.
SEARCH_GRID: dict[str, list[Any]] = {
    "stop": ["best_ended", "beam_full"],
    "length_penalty": [0.6, 1.0, 1.4, 2.0],
    "coverage_penalty": [0.0, 0.1, 0.2, 0.4],
    "word_reward": [0.0, 0.1, 0.2, 0.4],
}
RERANK_WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.2]


@dataclass
class Trial:
    setting: str  # e.g. "search.word_reward=0.2"
    bleu: float
    ratio: float  # hypothesis ÷ reference length


def dev_score(hypotheses: list[str], references: list[str]) -> tuple[float, float]:
    bleu = sacrebleu.corpus_bleu(hypotheses, [references])
    return bleu.score, bleu.sys_len / max(bleu.ref_len, 1)


def tune(config: Config, report: Callable[[Trial], None] = lambda trial: None,
         grid: dict[str, list[Any]] | None = None,
         rerank_weights: list[float] | None = None) -> dict:
    """Tune `config`'s search on its dev split; writes and returns what search.tuned.yaml holds.
    `report` sees every trial as it is measured."""
    grid = SEARCH_GRID if grid is None else grid
    translator = Translator.from_config(config, keep_attention=False)
    reranker, translator.reranker = translator.reranker, None  # step 1 searches without it
    sources, references = read_split(load_prepared(config), "dev")
    src_tokens = [translator.segment(line) for line in sources]
    src_ids = [translator.src_vocab.encode(tokens) for tokens in src_tokens]
    trials: list[Trial] = []

    def measure(setting: str, found: list[list[Hypothesis]]) -> Trial:
        texts = [translator.translation_of(tokens, hyps[:1]).text
                 for tokens, hyps in zip(src_tokens, found)]
        trial = Trial(setting, *dev_score(texts, references))
        trials.append(trial)
        report(trial)
        return trial

    def search_with(search: SearchConfig) -> list[list[Hypothesis]]:
        return decode_ids(translator.model, src_ids, search, translator.device,
                          keep_attention=False, workers=search.workers,
                          bf16=translator.uses_bf16(search))

    best_search = config.search
    best = measure(describe(best_search), search_with(best_search))
    for key, values in grid.items():
        for value in values:
            if value == getattr(best_search, key):
                continue
            candidate = dataclasses.replace(best_search, **{key: value})
            trial = measure(describe(candidate), search_with(candidate))
            if trial.bleu > best.bleu:
                best, best_search = trial, candidate

    weights = list(config.eval.rerank_weights)
    if reranker is not None:
        n_best = dataclasses.replace(best_search, n_best=best_search.beam_size)
        found = search_with(n_best)
        with torch.autocast(translator.device.type, dtype=torch.bfloat16,
                            enabled=translator.uses_bf16(n_best)):  # as make eval rescores
            terms = reranker.terms(src_ids, found, n_best)
        best = measure(describe(best_search, weights), combine(found, terms, weights))
        for k in range(len(weights)):
            for value in rerank_weights or RERANK_WEIGHTS:
                candidate_weights = weights[:k] + [value] + weights[k + 1:]
                if value == weights[k]:
                    continue
                trial = measure(describe(best_search, candidate_weights),
                                combine(found, terms, candidate_weights))
                if trial.bleu > best.bleu:
                    best, weights = trial, candidate_weights

    tuned = {
        "search": {key: getattr(best_search, key) for key in TUNED_SEARCH_KEYS},
        **({"eval": {"rerank_weights": weights}} if reranker is not None else {}),
        "dev_bleu": round(best.bleu, 2),
        "dev_length_ratio": round(best.ratio, 4),
        "models": [str(p) for p in translator.checkpoints],
        "trials": [dataclasses.asdict(t) for t in trials],
    }
    atomic_write_text(tuned_path(config), "# Written by `make tune` (nmt/evaluation/tune.py): "
                      "the search chosen on dev.\n" + yaml.safe_dump(tuned, sort_keys=False,
                                                                      allow_unicode=True))
    return tuned


def describe(search: SearchConfig, rerank_weights: list[float] | None = None) -> str:
    """The tuned keys of a setting, as overrides."""
    text = " ".join(f"search.{key}={getattr(search, key)}" for key in TUNED_SEARCH_KEYS)
    return text if rerank_weights is None else f"{text} eval.rerank_weights={rerank_weights}"
