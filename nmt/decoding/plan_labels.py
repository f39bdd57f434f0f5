"""The names of a decoding's results files: results.<label>.json, read by a person.

A label says, in words, what was decoded: "ensemble.average_best5.rerank" is the members'
ensemble, each the average of its five best checkpoints, reranked; None (results.json) is the
run's own best.pt. Whatever the words cannot say (other search settings or weights, other
rescoring models, a checkpoint from another folder) ends the label with a short hash of it, and
the resolved precision and device end it too (".bf16", ".cuda"): two decodings that can give
different outputs never share a results file. The results file also records the plan's content
(nmt/decoding/plan.py `DecodingPlan.content`), which nmt/evaluation/compare.py checks.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from nmt.checkpoints.choose import choose_checkpoints, configured_label
from nmt.config.schema import Config
from nmt.config.tuned import tuned_path, with_tuned_search
from nmt.io import short_hash

# Search keys that change how fast a decoding runs, or how many candidates it returns, but not
# the translation it scores
OUTPUT_NEUTRAL = ("batch_size", "workers", "n_best")
# What the machine decides, not the config: ends the label of a decoding in bfloat16 or on a GPU
RESOLVED_SUFFIXES = ("bf16", "cuda")


def decoding_differences(own: Config, config: Config) -> tuple[tuple[str, Any], ...]:
    """The search settings and rescoring weights of `config` that differ from `own`'s; those
    that change no output (batch_size, workers, n_best) are left out."""
    found = [(f"search.{key}", value) for key, value in dataclasses.asdict(config.search).items()
             if key not in OUTPUT_NEUTRAL and value != getattr(own.search, key)]
    for key in ("rerank_weights", "channel_weight"):
        if getattr(config.eval, key) != getattr(own.eval, key):
            found.append((f"eval.{key}", getattr(config.eval, key)))
    return tuple(found)


def settings_label(label: str | None, settings: tuple[tuple[str, Any], ...]) -> str | None:
    """`label` with a short hash of `settings` after it ("settings-3f9a1c"), so that a decoding
    with other settings never writes over another's results."""
    if not settings:
        return label
    digest = short_hash(settings)
    return f"settings-{digest}" if label is None else f"{label}.settings-{digest}"


def engine_label(label: str | None, config: Config) -> str | None:
    """results.<label>.ctranslate2-int8.json for a run decoded by an engine (export.engine)."""
    if config.export.engine == "none":
        return label
    engine = f"{config.export.engine}-{config.export.quantization}"
    return engine if label is None else f"{label}.{engine}"


def rescored_label(label: str | None) -> str:
    """results.rerank.json for the run's own model, results.<label>.rerank.json for others."""
    return "rerank" if label is None else f"{label}.rerank"


def resolved_label(label: str | None, bf16: bool, device: str) -> str | None:
    """`label` with what the machine decided: ".cuda" on a GPU, ".bf16" in bfloat16."""
    parts = [part for part, used in (("cuda", device == "cuda"), ("bf16", bf16)) if used]
    return ".".join([label, *parts] if label else parts) or label


def planned_label(config: Config, tuned: bool = False) -> str | None:
    """The label of the results `make eval` writes for `config` in float32 on the CPU, from the
    config alone (the ledger reads the saved configs of runs whose checkpoints may be gone);
    with `tuned`, as the run's tuned search file, if it has one, makes it. eval.ensemble names
    files by their content: read here, an NMTError when they are gone."""
    if config.eval.ensemble:
        return choose_checkpoints(config).label
    rescored = config.eval.rerank or (config.training.channel_members and config.eval.channel_weight > 0)
    label = configured_label(config)
    label = engine_label(rescored_label(label) if rescored else label, config)
    if tuned and tuned_path(config).is_file():
        label = settings_label(label, decoding_differences(config, with_tuned_search(config)))
    return label


def same_decoding(label: str | None, planned: str | None) -> bool:
    """Whether results.<label>.json is `planned`'s decoding, in whatever precision and on
    whatever device the machine resolved (".bf16", ".cuda" after it)."""
    if label == planned:
        return True
    rest = (label or "")[len(planned) + 1:] if planned and (label or "").startswith(planned + ".") \
        else (label or "") if planned is None else None
    return rest is not None and bool(rest) and all(part in RESOLVED_SUFFIXES for part in rest.split("."))
