"""The decoding plan: what a run decodes with, resolved once, as one frozen value.

    plan = plan_for(load_config("configs/tatoeba.yaml"))
    translator = Translator.from_plan(plan)

Every way into decoding builds its plan here and nowhere else: `make eval`, `make tune`,
`make translate`, `make serve`, `make align`, the benches and every Translator constructor. So
no two of them can decode a run differently. A plan holds:

- the translating checkpoints (nmt/checkpoints/choose.py) and the label of their results file;
- the rescoring models, each with its weight and direction read once from its checkpoint:
  eval.rerank's checkpoints, then the run's channel members (training.channel_members,
  weighted eval.channel_weight);
- the search settings, with the run's tuned values (runs/<name>/search.tuned.yaml, written by
  `make tune`; a key given on the command line still wins), and bf16 and the workers resolved
  for the device;
- the decoding choices that differ from the run's own (its saved config's), which name its
  results file apart (`settings_label`): no two decodings share a results file.

Building a plan runs the averaging step first (eval.average: each average written once,
nmt/checkpoints/averaging.py); choosing the checkpoints then only reads.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoints.averaging import average_label, average_once, parse_average
from nmt.checkpoints.choose import choose_checkpoints, chosen_in
from nmt.checkpoints.file import load_checkpoint
from nmt.checkpoints.member_dirs import channel_run_dirs, translating_run_dirs
from nmt.config.loader import load_saved_config
from nmt.config.migrate import config_in_sections
from nmt.config.schema import Config, Device, SearchConfig
from nmt.config.tuned import tuned_path, with_tuned_search
from nmt.errors import NMTError
from nmt.runtime import pick_device, use_bf16

Checkpoints = str | Path | Sequence[str | Path] | None
# Search keys that change how fast a decoding runs, or how many candidates it returns, but not
# the translation it scores
OUTPUT_NEUTRAL = ("batch_size", "workers", "n_best")


@dataclass(frozen=True)
class RescoringModel:
    """One model that rescores the search's n-best list (nmt/decoding/rerank.py)."""

    path: Path
    weight: float  # w_k in score(y) = s(y) + Σ_k w_k · term_k(y)
    channel: bool  # a reverse (English → Chinese) model: its term is log p(x | y)
    target_order: str  # the order it reads a candidate in (a channel model: the source)


@dataclass(frozen=True)
class DecodingPlan:
    config: Config  # the run's, with its tuned search: data settings, run folder, eval split
    checkpoints: tuple[Path, ...]  # one model, or an ensemble's members
    # names results.<label>.json: the checkpoints' label (nmt/checkpoints/choose.py; None for the
    # run's own best/last.pt), with ".rerank" when rescored, or the one the caller gave
    label: str | None
    rescoring: tuple[RescoringModel, ...]  # empty: the search's best is the translation
    search: SearchConfig  # bf16 a bool and workers a count for `device`
    device: str  # cpu or cuda
    tuned: Path | None = None  # the search.tuned.yaml applied, if the run has one
    # The decoding choices that differ from the run's own (its saved config's): tuned values and
    # overrides, as ("search.length_penalty", 1.4) pairs; a hash of them ends the label.
    settings: tuple[tuple[str, Any], ...] = ()
    # The export folder an inference engine decodes instead of PyTorch (export.engine,
    # nmt/export/folder.py); None: the checkpoints themselves
    engine: Path | None = None

    @property
    def channel(self) -> RescoringModel | None:
        """The first channel model: the other direction's attention for alignment."""
        return next((model for model in self.rescoring if model.channel), None)

    def with_search(self, **changes) -> DecodingPlan:
        """The same plan with other search settings (e.g. serve's workers=1)."""
        return dataclasses.replace(self, search=dataclasses.replace(self.search, **changes))


def plan_for(config: Config, overrides: Sequence[str] = (), checkpoints: Checkpoints = None,
             label: str | None = None, tuned: bool = True) -> DecodingPlan:
    """How `config`'s run decodes: `checkpoints` when named (else what eval.* chooses),
    rescored by eval.rerank's models and the channel members, searched with the run's tuned
    settings (unless `tuned` is False, as make tune starts) except the keys `overrides` set."""
    own = _own_config(config)
    tuned_file = tuned_path(config) if tuned and tuned_path(config).is_file() else None
    if tuned_file is not None:
        config = with_tuned_search(config, overrides)
    named = _named(checkpoints)
    run_dirs = [] if named else translating_run_dirs(config)
    with_channel = config.eval.channel_weight > 0
    _average(config, run_dirs + (channel_run_dirs(config) if with_channel else []))
    chosen = choose_checkpoints(config, named or None, label)
    rescoring = _rescoring(config)
    settings = decoding_differences(own, config)
    if label is None:
        label = rescored_label(chosen.label) if rescoring else chosen.label
        label = settings_label(engine_label(label, config), settings)
    engine = None
    if config.export.engine != "none":  # written once, as an average (nmt/export/folder.py)
        from nmt.export.folder import export_once
        engine = export_once(config, chosen.paths[0])
    device = pick_device("cpu" if engine else config.training.device)
    return DecodingPlan(config, tuple(chosen.paths), label, rescoring,
                        resolved_search(config.search, device), device.type, tuned_file, settings,
                        engine)


def _own_config(config: Config) -> Config:
    """The run's own decoding: the config its training saved in the run folder (the one given
    when there is none, or it is unreadable)."""
    saved = config.run_dir / "config.yaml"
    try:
        return load_saved_config(saved) if saved.is_file() else config
    except NMTError:
        return config


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
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:6]
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


def planned_label(config: Config, tuned: bool = False) -> str | None:
    """The label of the results `make eval` writes for `config`, from the config alone (the
    ledger reads the saved configs of runs whose checkpoints may be gone); with `tuned`, as the
    run's tuned search file, if it has one, makes it."""
    averaged = average_label(*parse_average(config.eval.average)) if config.eval.average else None
    label = (f"ensemble.{averaged}" if averaged else "ensemble") if config.training.members > 1 \
        else averaged
    rescored = config.eval.rerank or (config.training.channel_members and config.eval.channel_weight > 0)
    label = engine_label(rescored_label(label) if rescored else label, config)
    if tuned and tuned_path(config).is_file():
        label = settings_label(label, decoding_differences(config, with_tuned_search(config)))
    return label


def _rescoring(config: Config) -> tuple[RescoringModel, ...]:
    """eval.rerank's models with their weights, then the channel members' with channel_weight."""
    rescoring = [rescoring_model(Path(path), weight, "eval.rerank")
                 for path, weight in zip(config.eval.rerank, config.eval.rerank_weights)]
    if config.eval.channel_weight > 0:
        channel = chosen_in(config, channel_run_dirs(config))
        rescoring += [rescoring_model(path, config.eval.channel_weight, "training.channel_members")
                      for path in channel]
    return tuple(rescoring)


def run_plan(run_dir: str | Path, device: Device = "auto") -> DecodingPlan:
    """The plan of a trained run folder (runs/<name>/, with the config.yaml training saved
    there), even when the folder has moved; `device`: auto, cpu or cuda."""
    run_dir = Path(run_dir)
    if (run_dir / "export.json").is_file():  # an export folder, maybe on another machine
        return export_plan(run_dir)
    saved = run_dir / "config.yaml"
    if not saved.is_file():
        raise NMTError(f"{run_dir}: not a run folder (no config.yaml); train one with "
                       f"`make train` or name a checkpoint with Translator.from_checkpoint")
    config = load_saved_config(saved)
    return plan_for(dataclasses.replace(
        config, runs_dir=str(run_dir.parent), name=run_dir.name,
        training=dataclasses.replace(config.training, device=device)))


def export_plan(folder: Path) -> DecodingPlan:
    """The plan of an export folder alone (nmt/export/folder.py): its engine, on the CPU, with
    the search settings of the config saved in it; no checkpoint needed."""
    from nmt.export.folder import load_export

    export = load_export(folder)
    config = export.config
    label = engine_label(None, config)
    return DecodingPlan(config, (Path(export.manifest.get("checkpoint", "")),), label, (),
                        resolved_search(config.search, torch.device("cpu")), "cpu", engine=folder)


def checkpoints_plan(config: Config, checkpoints: Sequence[Path], search: SearchConfig | None,
                     device: torch.device) -> DecodingPlan:
    """A plan of checkpoints alone, as loaded (Translator.from_checkpoints): `config` is the
    first one's, `search` the one given (default its own); no run, tuned file or rescoring."""
    chosen = choose_checkpoints(config, list(checkpoints))
    return DecodingPlan(config, tuple(chosen.paths), chosen.label, (),
                        resolved_search(search or config.search, device), device.type)


def resolved_search(search: SearchConfig, device: torch.device) -> SearchConfig:
    """`search` with bf16 decided for `device` and workers counted (0: one per thread)."""
    workers = 1 if device.type != "cpu" else search.workers or torch.get_num_threads()
    return dataclasses.replace(search, bf16=use_bf16(search.bf16, device, "search.bf16"),
                               workers=workers)


def _named(checkpoints: Checkpoints) -> list[Path]:
    if checkpoints is None:
        return []
    if isinstance(checkpoints, (str, Path)):
        return [Path(checkpoints)]
    return [Path(p) for p in checkpoints]


def _average(config: Config, run_dirs: list[Path]) -> None:
    """The averaging step, before anything chooses: each run folder's eval.average, written once."""
    if config.eval.average and not config.eval.ensemble:
        how, count = parse_average(config.eval.average)
        for run_dir in run_dirs:
            average_once(run_dir, how, count)


def rescoring_model(path: str | Path, weight: float, key: str = "eval.rerank") -> RescoringModel:
    """A rescoring checkpoint with its direction and target order, read from its saved config;
    errors name the `key` it came from."""
    try:
        # a glance: the Reranker loads the weights (nmt/decoding/rerank.py)
        saved = config_in_sections(load_checkpoint(path, glance=True).get("config") or {})
        model = saved.get("model") or {}
    except NMTError as error:
        raise NMTError(f"{key}: {error}") from None
    return RescoringModel(Path(path), float(weight), model.get("direction", "forward") == "reverse",
                          model.get("target_order", "left_to_right"))
