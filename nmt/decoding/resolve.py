"""Resolving a decoding plan (nmt/decoding/plan.py, its parts in plan_types.py): reading a run folder into what it decodes
with, each part named by its content; with `write`, the materializing step on the way.

In order: the averages eval.average asks of each model folder (known by the checksums of what
they average: nmt/checkpoints/averaging.py), the translating checkpoints, the tuned search if
it was tuned on these checkpoints, the rescoring models (each checked against its role), the
label, then the engine's export folder (one per checkpoint content: nmt/export/folder.py).
Only `write=True` writes, and only the averages, the export and an older run's manifest.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from nmt.checkpoints.averaging import PlannedAverage, parse_average, planned_average, write_planned
from nmt.checkpoints.choose import choose_checkpoints, chosen_in
from nmt.checkpoints.file import load_checkpoint
from nmt.checkpoints.manifest import MANIFEST, channel_run_dirs, translating_run_dirs, write_manifest
from nmt.config.loader import load_saved_config
from nmt.config.migrate import config_in_sections
from nmt.config.schema import Config
from nmt.config.tuned import tuned_on, tuned_path, with_tuned_search
from nmt.decoding.plan_types import DecodingPlan, PlanRequest, RescoringModel, device_for, resolved_search
from nmt.decoding.plan_labels import (decoding_differences, engine_label, rescored_label,
                                      resolved_label, settings_label)
from nmt.errors import NMTError
from nmt.io import file_sha256, short_hash

log = logging.getLogger(__name__)


def resolve(request: PlanRequest, write: bool) -> DecodingPlan:
    """The plan `request` asks for; `write`: write what it needs on the way."""
    config = request.config
    own = own_config(config)
    named = list(request.checkpoints)
    averages = _averages(config, named, write)
    chosen = choose_checkpoints(config, named or None, request.label)
    pending = {a.output for a in averages if not a.written}
    shas = tuple("" if path in pending else file_sha256(path) for path in chosen.paths)
    tuned_file = _tuned_file(config, request, shas)
    if tuned_file is not None:
        config = with_tuned_search(config, request.overrides)
    rescoring = _rescoring(config, averages)
    settings = decoding_differences(own, config) + _rerank_difference(own, config)
    device = device_for(config, config.export.engine != "none")
    search = resolved_search(config.search, device)
    label = request.label
    if label is None:
        label = rescored_label(chosen.label) if rescoring else chosen.label
        label = resolved_label(settings_label(engine_label(label, config), settings),
                               bool(search.bf16) and config.export.engine == "none", device.type)
    export = None
    if config.export.engine != "none":
        from nmt.export.folder import planned_export, write_export

        export = planned_export(config, chosen.paths[0], shas[0], tuned_file)
        if write:
            export = write_export(config, export)
    return DecodingPlan(config, tuple(chosen.paths), label, rescoring, search, device.type,
                        tuned_file, settings, None if export is None else export.folder,
                        shas, tuple(averages), export, request)


def own_config(config: Config) -> Config:
    """The run's own decoding: the config its training saved in the run folder (the one given
    when it has none yet); an unreadable one is an error, not a silent stand-in."""
    saved = config.run_dir / "config.yaml"
    if not saved.is_file():
        return config
    try:
        return load_saved_config(saved)
    except NMTError as error:
        raise NMTError(f"{saved}: the run's saved config is unreadable, so its own decoding is "
                       f"unknown ({error}); train the run again or restore the file") from None


def _averages(config: Config, named: list[Path], write: bool) -> list[PlannedAverage]:
    """eval.average's average of each model folder the plan reads (the translating ones, and
    the channel ones when they rescore); written now with `write`."""
    if not config.eval.average or config.eval.ensemble or named:
        return []
    folders = translating_run_dirs(config)
    if config.eval.channel_weight > 0 or _tuned_channel(config):
        folders += channel_run_dirs(config)
    how, count = parse_average(config.eval.average)
    averages = [planned_average(folder, how, count) for folder in folders]
    if write:
        if not (config.run_dir / MANIFEST).is_file():  # an older run folder: its next write
            write_manifest(_as_trained(config))
        for average in averages:
            write_planned(average)
        averages = [planned_average(folder, how, count) for folder in folders]
    return averages


def _tuned_channel(config: Config) -> bool:
    """Whether the run's tuned file gives its channel models a weight the config does not."""
    return config.training.channel_members > 0 and tuned_path(config).is_file() and \
        with_tuned_search(config).eval.channel_weight > 0


def _as_trained(config: Config) -> Config:
    """`config` as the run was trained (its saved config, where the folder is now)."""
    trained = own_config(config)
    return dataclasses.replace(trained, runs_dir=config.runs_dir, name=config.name)


def _tuned_file(config: Config, request: PlanRequest, shas: tuple[str, ...]) -> Path | None:
    """The run's search.tuned.yaml when it applies: asked for, and tuned on these checkpoints
    (a file tuned on others is left out, with a warning that says how to tune again)."""
    path = tuned_path(config)
    if not request.tuned or not path.is_file():
        return None
    recorded = tuned_on(path)
    if recorded is not None and "" not in shas and list(recorded) != list(shas):
        log.warning("%s was tuned on other checkpoints than this decoding's: not applied; run "
                    "`make tune` again to tune these", path)
        return None
    return path


def _rescoring(config: Config, averages: list[PlannedAverage]) -> tuple[RescoringModel, ...]:
    """eval.rerank's models with their weights, then the channel models with channel_weight,
    each checked against its role: a channel model must be a reverse one."""
    rescoring = [rescoring_model(Path(path), weight, "eval.rerank")
                 for path, weight in zip(config.eval.rerank, config.eval.rerank_weights)]
    if config.eval.channel_weight > 0:
        pending = {a.output: a for a in averages if not a.written}
        for path in chosen_in(config, channel_run_dirs(config)):
            model = rescoring_model(path, config.eval.channel_weight, "training.channel_members",
                                    pending.get(path))
            if not model.channel:
                raise NMTError(f"{path} is a forward model, but the run's manifest makes it a "
                               f"channel model (training.channel_members): a channel model reads "
                               f"English and writes Chinese (model.direction: reverse)")
            rescoring.append(model)
    return tuple(rescoring)


def rescoring_model(path: str | Path, weight: float, key: str = "eval.rerank",
                    pending: PlannedAverage | None = None) -> RescoringModel:
    """A rescoring checkpoint with its direction, target order and content, read from its saved
    config (of a pending average: of the newest checkpoint it will average); errors name the
    `key` it came from."""
    read = pending.sources[-1] if pending is not None else Path(path)
    try:
        # a glance: the Reranker loads the weights (nmt/decoding/rerank.py)
        saved = config_in_sections(load_checkpoint(read, glance=True).get("config") or {})
        sha = "" if pending is not None else file_sha256(path)
    except (NMTError, OSError) as error:
        raise NMTError(f"{key}: {path}: {getattr(error, 'strerror', None) or error}") from None
    model = saved.get("model") or {}
    return RescoringModel(Path(path), float(weight), model.get("direction", "forward") == "reverse",
                          model.get("target_order", "left_to_right"), sha)


def _rerank_difference(own: Config, config: Config) -> tuple[tuple[str, str], ...]:
    """eval.rerank's models by content, when they are not the run's own (spelled any way)."""
    if not config.eval.rerank:
        return ()
    ours = [file_sha256(p) if Path(p).is_file() else str(p) for p in config.eval.rerank]
    theirs = [file_sha256(p) if Path(p).is_file() else str(p) for p in own.eval.rerank]
    return () if ours == theirs else (("eval.rerank", short_hash(ours, 12)),)
