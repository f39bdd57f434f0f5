"""The trained runs a request may name: folders right under runs/, loaded once and shared
(each behind a Batcher, so that requests arriving together share a search)."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

from nmt.config.schema import Device
from nmt.decoding.plan import DecodingPlan, run_plan
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.serve.batcher import Batcher

log = logging.getLogger(__name__)

# A run name is a plain folder name: no separator, no "..", so no request can leave runs/.
RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class UnknownRun(NMTError):
    """The request named a run that is not a trained run folder under runs/."""


class RunRegistry:
    def __init__(self, runs_dir: str | Path, default_run: str, device: Device = "cpu",
                 default_plan: DecodingPlan | None = None):
        """`default_plan`: how the default run decodes (the config and overrides `make serve`
        was given); any other run decodes as its own saved config says (run_plan)."""
        self.runs_dir, self.default_run, self.device = Path(runs_dir), default_run, device
        self.default_plan = default_plan
        self._loaded: dict[str, Batcher] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        """The trained runs: folders with a config.yaml and at least one checkpoint."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(run.name for run in self.runs_dir.iterdir() if self._trained(run))

    def _trained(self, run: Path) -> bool:
        checkpoints = run / "checkpoints"
        return (run / "config.yaml").is_file() and checkpoints.is_dir() and any(checkpoints.glob("*.pt"))

    def get(self, name: str | None = None) -> Batcher:
        """The run's Translator (`.translator`) behind its Batcher, loaded on first use (one load
        even when requests race)."""
        name = name or self.default_run
        if not RUN_NAME.fullmatch(name) or ".." in name:
            raise UnknownRun(f"run {name!r}: a run is named by its folder under runs/ "
                             f"(letters, digits, '_', '-', '.')")
        if name not in self._loaded:
            with self._lock:
                if name not in self._loaded:
                    if not self._trained(self.runs_dir / name):
                        raise UnknownRun(f"run {name!r}: no trained run of that name under "
                                         f"{self.runs_dir}/ (trained: {', '.join(self.names()) or 'none'}"
                                         f"; `make train` makes one)")
                    log.info("loading run %s", name)
                    plan = (self.default_plan if name == self.default_run and self.default_plan
                            else run_plan(self.runs_dir / name, self.device))
                    # No forked search workers: forking a process whose threads serve requests
                    # could copy a lock one of them holds; a request's batch is small anyway.
                    translator = Translator.from_plan(plan.with_search(workers=1))
                    # Shared by threads: decoding restores the mode it found, so eval stays eval
                    # and no request ever sees another switch dropout on.
                    translator.model.eval()
                    self._loaded[name] = Batcher(translator)
        return self._loaded[name]
