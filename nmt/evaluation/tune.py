"""make tune: the search settings chosen on the dev split, never on test.

With the models `make eval` would score (members, averages, eval.rerank's rescorers), the dev
split is translated once per setting tried, one key at a time (coordinate ascent: each key's
values are tried with the best values found so far for the others):

1. search.stop, length_penalty, coverage_penalty, word_reward: a beam search each;
2. eval.rerank_weights and eval.channel_weight, one at a time, on the n-best lists of the chosen
   search: the rescorers read every candidate once, and each weight only ranks them again.

Both steps decode through the Translator's own search → rerank path (Translator.decode), as
`make eval` does, with the run's decoding plan (nmt/decoding/plan.py).

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
import yaml

from nmt.config.schema import Config, SearchConfig
from nmt.config.tuned import TUNED_SEARCH_KEYS, tuned_path
from nmt.data.prepare import load_prepared
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.plan import plan_for
from nmt.decoding.rerank import reweighed
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
    plan = plan_for(config, tuned=False)  # from the config's own settings, not an earlier tuning
    tuning = Tuning(Translator.from_plan(plan, keep_attention=False), *read_split(
        load_prepared(config), "dev"), report)
    best, search = tuning.search_keys(plan.search, SEARCH_GRID if grid is None else grid)
    weights = [*config.eval.rerank_weights, config.eval.channel_weight]
    if tuning.translator.reranker is not None:
        best, weights = tuning.rescoring_weights(search, weights, rerank_weights or RERANK_WEIGHTS)
    channel_members = len(plan.rescoring) > len(config.eval.rerank)
    channel = {"channel_weight": weights[-1]} if channel_members else {}
    tuned = {
        "search": {key: getattr(search, key) for key in TUNED_SEARCH_KEYS},
        **({"eval": {"rerank_weights": weights[:-1], **channel}}
           if tuning.translator.reranker is not None else {}),
        "dev_bleu": round(best.bleu, 2),
        "dev_length_ratio": round(best.ratio, 4),
        "models": [str(p) for p in plan.checkpoints],
        "tuned_on": list(plan.checkpoint_sha256),  # applied only to these checkpoints' contents
        "trials": [dataclasses.asdict(t) for t in tuning.trials],
    }
    atomic_write_text(tuned_path(config), "# Written by `make tune` (nmt/evaluation/tune.py): "
                      "the search chosen on dev.\n" + yaml.safe_dump(tuned, sort_keys=False,
                                                                      allow_unicode=True))
    return tuned


def expanded(weights: list[float], channel_models: int) -> list[float]:
    """Tuned weights (eval.rerank_weights, then eval.channel_weight) as the plan's rescoring
    models take them: the channel weight once per channel member."""
    return weights[:-1] + [weights[-1]] * channel_models


def describe_weights(weights: list[float], channel: bool) -> str:
    """Tuned weights as overrides; eval.channel_weight only where there are channel members."""
    text = f"eval.rerank_weights={weights[:-1]}"
    return f"{text} eval.channel_weight={weights[-1]}" if channel else text


class Tuning:
    """The dev split translated once per setting tried, through the Translator's own search →
    rerank path; every trial kept and reported."""

    def __init__(self, translator: Translator, sources: list[str], references: list[str],
                 report: Callable[[Trial], None]):
        self.translator, self.references, self.report = translator, references, report
        self.src_tokens = [translator.segment(line) for line in sources]
        self.src_ids = [translator.src_vocab.encode(tokens) for tokens in self.src_tokens]
        self.trials: list[Trial] = []

    def measure(self, setting: str, found: list[list[Hypothesis]]) -> Trial:
        side = self.translator.target_side()
        texts = [side.translation(tokens, hyps[:1]).text for tokens, hyps in zip(self.src_tokens, found)]
        trial = Trial(setting, *dev_score(texts, self.references))
        self.trials.append(trial)
        self.report(trial)
        return trial

    def search_keys(self, search: SearchConfig, grid: dict[str, list[Any]]
                    ) -> tuple[Trial, SearchConfig]:
        """Step 1: each search key in turn, searched without the rescoring models."""
        plain = self.translator.with_reranker(None)
        best = self.measure(describe(search), plain.decode(self.src_ids, search))
        for key, values in grid.items():
            for value in values:
                if value == getattr(search, key):
                    continue
                candidate = dataclasses.replace(search, **{key: value})
                trial = self.measure(describe(candidate), plain.decode(self.src_ids, candidate))
                if trial.bleu > best.bleu:
                    best, search = trial, candidate
        return best, search

    def rescoring_weights(self, search: SearchConfig, weights: list[float], values: list[float]
                          ) -> tuple[Trial, list[float]]:
        """Step 2: each weight in turn (eval.rerank_weights, then eval.channel_weight); the
        rescorers read every candidate once (as make eval rescores them, on the whole beam),
        and each weight only ranks them again."""
        reranker = self.translator.reranker
        assert reranker is not None
        channel_models = len(reranker.rescorers) - (len(weights) - 1)  # after eval.rerank's
        whole_beam = dataclasses.replace(search, n_best=search.beam_size)  # every candidate kept
        found = self.translator.with_reranker(reranker.scoring_all()).decode(self.src_ids, whole_beam)

        def measure(candidate: list[float]) -> Trial:
            return self.measure(f"{describe(search)} {describe_weights(candidate, channel_models > 0)}",
                                reweighed(found, expanded(candidate, channel_models)))

        best = measure(weights)
        for k in range(len(weights) if channel_models else len(weights) - 1):
            for value in values:
                if value != weights[k]:
                    candidate = weights[:k] + [value] + weights[k + 1:]
                    trial = measure(candidate)
                    if trial.bleu > best.bleu:
                        best, weights = trial, candidate
        return best, weights


def describe(search: SearchConfig) -> str:
    """The tuned search keys of a setting, as overrides."""
    return " ".join(f"search.{key}={getattr(search, key)}" for key in TUNED_SEARCH_KEYS)
