"""The parts of a decoding plan (nmt/decoding/plan.py, which resolves them): the plan itself,
its rescoring models, the request it answers, and the export it decodes with. Values only:
nothing here reads a run folder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoints.averaging import PlannedAverage
from nmt.config.schema import Config, SearchConfig
from nmt.decoding.plan_labels import OUTPUT_NEUTRAL
from nmt.errors import NMTError
from nmt.export.folder import PlannedExport
from nmt.runtime import pick_device, use_bf16

Checkpoints = str | Path | Sequence[str | Path] | None


@dataclass(frozen=True)
class RescoringModel:
    """One model that rescores the search's n-best list (nmt/decoding/rerank.py)."""

    path: Path
    weight: float  # w_k in score(y) = s(y) + Σ_k w_k · term_k(y)
    channel: bool  # a reverse (English → Chinese) model: its term is log p(x | y)
    target_order: str  # the order it reads a candidate in (a channel model: the source)
    sha256: str = ""  # its content; "" while its average is still to be written


@dataclass(frozen=True)
class PlanRequest:
    """What a plan was asked for; the materializing step resolves it again once it has written."""

    config: Config
    overrides: tuple[str, ...] = ()
    checkpoints: tuple[Path, ...] = ()  # named by the caller; () for what eval.* chooses
    label: str | None = None
    tuned: bool = True


@dataclass(frozen=True)
class DecodingPlan:
    config: Config  # the run's, with its tuned search: data settings, run folder, eval split
    checkpoints: tuple[Path, ...]  # one model, or an ensemble's members
    # names results.<label>.json (nmt/decoding/plan_labels.py): the checkpoints' label, with
    # ".rerank" when rescored, a hash of other settings, ".bf16"/".cuda" as resolved
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
    checkpoint_sha256: tuple[str, ...] = ()  # each checkpoint's content ("" while pending)
    averages: tuple[PlannedAverage, ...] = ()  # eval.average's, written or not
    export: PlannedExport | None = None
    request: PlanRequest | None = None  # None: a plan of files alone (nothing to write)

    @property
    def channel(self) -> RescoringModel | None:
        """The first channel model: the other direction's attention for alignment."""
        return next((model for model in self.rescoring if model.channel), None)

    @property
    def pending(self) -> list[Path]:
        """What the materializing step must write before this plan decodes."""
        return [a.output for a in self.averages if not a.written] + (
            [self.export.folder] if self.export is not None and not self.export.written else [])

    def require_ready(self) -> None:
        """NMTError naming what is still to be written and the command that writes it."""
        if self.pending:
            run_dir = self.config.run_dir
            names = [str(p.relative_to(run_dir)) if p.is_relative_to(run_dir) else str(p)
                     for p in self.pending]
            raise NMTError(
                f"{run_dir}: {', '.join(names)} still to be written (averaged or exported) for "
                f"this decoding; run `make eval CONFIG=...` (or `nmt.materialize_run(run_dir)` "
                f"in Python), which writes it once")

    def content(self) -> dict:
        """What decodes, by content: checkpoints, rescorers and weights, search, engine, dtype."""
        search = {k: v for k, v in dataclasses.asdict(self.search).items()
                  if k not in OUTPUT_NEUTRAL}
        return {"checkpoints": list(self.checkpoint_sha256),
                "rescoring": [[m.sha256, m.weight, m.channel] for m in self.rescoring],
                "search": search, "device": self.device,
                "engine": None if self.engine is None else
                [self.config.export.engine, self.config.export.quantization]}

    def with_search(self, **changes) -> DecodingPlan:
        """The same plan with other search settings (e.g. serve's workers=1)."""
        return dataclasses.replace(self, search=dataclasses.replace(self.search, **changes))


def resolved_search(search: SearchConfig, device: torch.device) -> SearchConfig:
    """`search` with bf16 decided for `device` and workers counted (0: one per thread)."""
    workers = 1 if device.type != "cpu" else search.workers or torch.get_num_threads()
    return dataclasses.replace(search, bf16=use_bf16(search.bf16, device, "search.bf16"),
                               workers=workers)


def device_for(config: Config, engine: bool) -> torch.device:
    return pick_device("cpu" if engine else config.training.device)
