"""The search settings `make tune` chose on the dev split, kept in the run folder and used by
`make eval`, `make translate`, `make serve` and `Translator.from_run` (nmt/evaluation/tune.py).

runs/<name>/search.tuned.yaml holds `search:` keys and `eval.rerank_weights`; a key given on the
command line (`search.word_reward=0`) still wins, so a tuned run can be scored both ways.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import yaml

from nmt.config.schema import Config, SearchConfig
from nmt.errors import NMTError

log = logging.getLogger(__name__)

TUNED_FILE = "search.tuned.yaml"
# What make tune chooses; nothing else in the file changes a config.
TUNED_SEARCH_KEYS = ("stop", "length_penalty", "coverage_penalty", "word_reward")


def tuned_path(config: Config) -> Path:
    return config.run_dir / TUNED_FILE


def with_tuned_search(config: Config, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """`config` with the run's tuned search settings, except the keys `overrides` set."""
    path = tuned_path(config)
    if not path.is_file():
        return config
    try:
        tuned = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        search_values = {key: tuned["search"][key] for key in TUNED_SEARCH_KEYS
                         if key in tuned.get("search", {})}
        rerank_weights = tuned.get("eval", {}).get("rerank_weights")
    except (yaml.YAMLError, AttributeError, TypeError) as error:
        raise NMTError(f"{path}: unreadable ({error}); run `make tune` again or delete it") from None
    given = {override.split("=", 1)[0].strip() for override in overrides}
    search_values = {k: v for k, v in search_values.items() if f"search.{k}" not in given}
    search = dataclasses.replace(config.search, **search_values)
    _check(search, path)
    evaluation = config.eval
    if (rerank_weights is not None and "eval.rerank_weights" not in given
            and len(rerank_weights) == config.rescoring_models):
        evaluation = dataclasses.replace(config.eval, rerank_weights=[float(w) for w in rerank_weights])
    if search_values or evaluation is not config.eval:
        log.info("search settings tuned on dev (%s): %s%s", path,
                 ", ".join(f"{k}={v}" for k, v in search_values.items()),
                 f", eval.rerank_weights={evaluation.rerank_weights}"
                 if evaluation is not config.eval else "")
    return dataclasses.replace(config, search=search, eval=evaluation)


def _check(search: SearchConfig, path: Path) -> None:
    if search.stop not in ("best_ended", "beam_full") or search.length_penalty < 0 \
            or search.coverage_penalty < 0:
        raise NMTError(f"{path}: a tuned value is out of range ({search}); run `make tune` again")
