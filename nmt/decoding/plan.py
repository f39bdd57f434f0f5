"""The decoding plan: what a run decodes with, resolved once, as one frozen value.

    plan = plan_for(load_config("configs/tatoeba.yaml"))   # a stage: resolve, then write
    translator = Translator.from_plan(plan)

Every way into decoding builds its plan here and nowhere else: `make eval`, `make tune`,
`make translate`, `make serve`, `make align`, the benches and every Translator constructor. So
no two of them can decode a run differently. A plan holds, each part named by its content:

- the translating checkpoints (nmt/checkpoints/choose.py, the run's models found through its
  manifest, nmt/checkpoints/manifest.py) with their SHA-256, and the label of their results;
- the rescoring models, each with its weight, direction and SHA-256: eval.rerank's
  checkpoints, then the run's channel models (weighted eval.channel_weight);
- the search settings, with the run's tuned values (runs/<name>/search.tuned.yaml, written by
  `make tune` and applied only to the checkpoints it was tuned on; a key given on the command
  line still wins), and bf16 and the workers resolved for the device;
- the engine's export folder, when export.engine decodes instead of PyTorch.

Resolving only reads (`resolve_plan`). What the plan needs written first, the averages of
eval.average and the engine's export, it names as pending (`DecodingPlan.pending`); the
materializing step writes them (`materialize`, nmt/decoding/materialize.py). `plan_for` does
both: the stages (`make eval`, `make tune`, `make translate`, `make align`, `make student`)
call it. The server and the Translator's constructors only resolve, and refuse a plan that is
not ready with the command that makes it so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

import torch

from nmt.config.loader import load_saved_config
from nmt.config.schema import Config, Device, SearchConfig
from nmt.decoding.plan_types import (Checkpoints, DecodingPlan, PlannedExport, PlanRequest,
                                     RescoringModel, resolved_search)
from nmt.decoding.resolve import resolve
from nmt.errors import NMTError

__all__ = ["DecodingPlan", "PlanRequest", "PlannedExport", "RescoringModel", "checkpoints_plan",
           "export_plan", "materialize", "materialize_run", "plan_for", "resolve_plan", "run_plan"]


def resolve_plan(config: Config, overrides: Sequence[str] = (), checkpoints: Checkpoints = None,
                 label: str | None = None, tuned: bool = True) -> DecodingPlan:
    """How `config`'s run decodes, only read: `checkpoints` when named (else what eval.*
    chooses), rescored by eval.rerank's models and the channel models, searched with the run's
    tuned settings (unless `tuned` is False, as make tune starts) except the keys `overrides`
    set. What is still to be written is `plan.pending`."""
    return resolve(PlanRequest(config, tuple(overrides), tuple(_named(checkpoints)), label, tuned),
                   write=False)


def plan_for(config: Config, overrides: Sequence[str] = (), checkpoints: Checkpoints = None,
             label: str | None = None, tuned: bool = True) -> DecodingPlan:
    """resolve_plan, then the materializing step: what the stages decode with."""
    return materialize(resolve_plan(config, overrides, checkpoints, label, tuned))


def materialize(plan: DecodingPlan) -> DecodingPlan:
    """The plan with what it needs written (averages, an export): the one step that writes."""
    if not plan.pending or plan.request is None:
        return plan
    return resolve(plan.request, write=True)


def run_plan(run_dir: str | Path, device: Device = "auto") -> DecodingPlan:
    """The plan of a trained run folder (runs/<name>/, with the config.yaml training saved
    there), even when the folder has moved, only read; `device`: auto, cpu or cuda. An export
    folder (nmt/export/folder.py) gives its own plan."""
    return resolve_plan(run_config(run_dir, device)) if not _is_export(run_dir) \
        else export_plan(Path(run_dir))


def materialize_run(run_dir: str | Path, device: Device = "auto") -> DecodingPlan:
    """The plan of a run folder with what it needs written (averages, an export): the one call
    of the Python API that writes into a run, for a user who asks for it."""
    return materialize(run_plan(run_dir, device))


def run_config(run_dir: str | Path, device: Device = "auto") -> Config:
    """The config a run folder's training saved, pointed at the folder where it is now."""
    run_dir = Path(run_dir)
    saved = run_dir / "config.yaml"
    if not saved.is_file():
        raise NMTError(f"{run_dir}: not a run folder (no config.yaml); train one with "
                       f"`make train` or name a checkpoint with Translator.from_checkpoint")
    config = load_saved_config(saved)
    return dataclasses.replace(config, runs_dir=str(run_dir.parent), name=run_dir.name,
                               training=dataclasses.replace(config.training, device=device))


def _is_export(folder: str | Path) -> bool:
    from nmt.export.folder import is_export_folder

    return is_export_folder(folder)


def export_plan(folder: Path) -> DecodingPlan:
    """The plan of an export folder alone (nmt/export/folder.py): its engine, on the CPU, with
    the search settings saved in it (the run's tuned ones included); no checkpoint needed."""
    from nmt.decoding.plan_labels import engine_label
    from nmt.export.folder import load_export

    export = load_export(folder)
    config = export.config
    return DecodingPlan(config, (Path(export.manifest.get("checkpoint", "")),),
                        engine_label(None, config), (),
                        resolved_search(config.search, torch.device("cpu")), "cpu", engine=folder,
                        checkpoint_sha256=(str(export.manifest.get("checkpoint_sha256", "")),))


def checkpoints_plan(config: Config, checkpoints: Sequence[Path], search: SearchConfig | None,
                     device: torch.device) -> DecodingPlan:
    """A plan of checkpoints alone, as loaded (Translator.from_checkpoints): `config` is the
    first one's, `search` the one given (default its own); no run, tuned file or rescoring."""
    return DecodingPlan(config, tuple(Path(p) for p in checkpoints), None, (),
                        resolved_search(search or config.search, device), device.type)


def _named(checkpoints: Checkpoints) -> list[Path]:
    if checkpoints is None:
        return []
    if isinstance(checkpoints, (str, Path)):
        return [Path(checkpoints)]
    return [Path(p) for p in checkpoints]
