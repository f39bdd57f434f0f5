"""The search settings `make tune` chose on the dev split, kept in the run folder and used by
`make eval`, `make translate`, `make serve` and `Translator.from_run` (nmt/evaluation/tune.py).

runs/<name>/search.tuned.yaml holds `search:` keys, `eval.rerank_weights` and
`eval.channel_weight`, and `tuned_on`, the SHA-256 of the checkpoints they were tuned on: a
decoding of other checkpoints leaves the file out, with a warning. A key given on the command line (`search.word_reward=0`) still wins, so a
tuned run can be scored both ways. nmt/decoding/plan.py applies them: every way into decoding
goes through it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
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


def with_tuned_search(config: Config, overrides: Sequence[str] = ()) -> Config:
    """`config` with the run's tuned search settings and rescoring weights, except the keys
    `overrides` set."""
    path = tuned_path(config)
    if not path.is_file():
        return config
    try:
        tuned = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        search_values = {key: tuned["search"][key] for key in TUNED_SEARCH_KEYS
                         if key in tuned.get("search", {})}
        weights = _tuned_weights(config, tuned.get("eval") or {})
    except (yaml.YAMLError, AttributeError, TypeError, ValueError) as error:
        raise NMTError(f"{path}: unreadable ({error}); run `make tune` again or delete it") from None
    given = {override.split("=", 1)[0].strip() for override in overrides}
    search_values = {k: v for k, v in search_values.items() if f"search.{k}" not in given}
    weights = {k: v for k, v in weights.items() if f"eval.{k}" not in given}
    search = dataclasses.replace(config.search, **search_values)
    _check(search, path)
    if search_values or weights:
        log.info("search settings tuned on dev (%s): %s", path, ", ".join(
            [f"search.{k}={v}" for k, v in search_values.items()]
            + [f"eval.{k}={v}" for k, v in weights.items()]))
    return dataclasses.replace(config, search=search, eval=dataclasses.replace(config.eval, **weights))


def tuned_on(path: Path) -> list[str] | None:
    """The SHA-256 of the checkpoints a tuned file was tuned on; None for a file written before
    tuned files recorded them (applied as before)."""
    try:
        recorded = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("tuned_on")
    except (yaml.YAMLError, AttributeError) as error:
        raise NMTError(f"{path}: unreadable ({error}); run `make tune` again or delete it") from None
    return None if recorded is None else [str(sha) for sha in recorded]


def _tuned_weights(config: Config, tuned: dict) -> dict:
    """The tuned eval.rerank_weights and eval.channel_weight that fit `config`'s rescoring
    models. A file written before channel_weight had a key of its own held the channel members'
    weights after eval.rerank's in rerank_weights."""
    rerank = [float(w) for w in tuned.get("rerank_weights") or []]
    channel = tuned.get("channel_weight")
    named, channels = len(config.eval.rerank), config.training.channel_members
    if channel is None and channels and len(rerank) == named + channels:
        rerank, channel = rerank[:named], rerank[named]
    weights: dict = {"rerank_weights": rerank} if rerank and len(rerank) == named else {}
    if channel is not None and channels:
        weights["channel_weight"] = float(channel)
    return weights


def _check(search: SearchConfig, path: Path) -> None:
    if search.stop not in ("best_ended", "beam_full") or search.length_penalty < 0 \
            or search.coverage_penalty < 0:
        raise NMTError(f"{path}: a tuned value is out of range ({search}); run `make tune` again")
