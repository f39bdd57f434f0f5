"""The trained runs a request may name: folders right under runs/, loaded on first use and
shared (each behind a Batcher: one decoding thread, so that requests arriving together share a
search). At most `serve.max_runs` are loaded at once: loading one more unloads the least
recently used other than the default run (its thread answers what it holds, then stops). The
default run loads in the background when the server starts; until it is ready, health and its
requests are answered 503. A load that failed is tried again on the next request. Requests
only read run folders: a run whose averages or export are not written yet is answered 409 with
the command that writes them (`make eval`, nmt/decoding/plan.py)."""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from pathlib import Path

from nmt.config.schema import Device
from nmt.config.serve_schema import ServeConfig
from nmt.decoding.plan import DecodingPlan, run_plan
from nmt.decoding.translator import Translator
from nmt.export.folder import is_export_folder
from nmt.errors import NMTError
from nmt.serve.answers import LineAnswers
from nmt.serve.batcher import Batcher, Overloaded

log = logging.getLogger(__name__)

# A run name is a plain folder name: no separator, no "..", so no request can leave runs/.
RUN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class UnknownRun(NMTError):
    """The request named a run that is not a trained run folder under runs/."""


class NotMaterialized(NMTError):
    """The run needs its averages or export written first: a 409 naming the command. A request
    only reads; it never averages or exports."""


class RunRegistry:
    def __init__(self, runs_dir: str | Path, default_run: str, device: Device = "cpu",
                 default_plan: DecodingPlan | None = None, limits: ServeConfig | None = None):
        """`default_plan`: how the default run decodes (the config and overrides `make serve`
        was given); any other run decodes as its own saved config says (run_plan). `limits`:
        the config's serve section."""
        self.runs_dir, self.default_run, self.device = Path(runs_dir), default_run, device
        self.default_plan, self.limits = default_plan, limits or ServeConfig()
        self._loaded: OrderedDict[str, Batcher] = OrderedDict()  # least recently used first
        self._loading: threading.Thread | None = None
        self._load_error: BaseException | None = None
        self._lock = threading.Lock()  # one load at a time (held while models load)
        self._index = threading.Lock()  # _loaded's order (held for a moment only)

    def names(self) -> list[str]:
        """The trained runs: folders with a config.yaml and at least one checkpoint."""
        if not self.runs_dir.is_dir():
            return []
        return sorted(run.name for run in self.runs_dir.iterdir() if self._trained(run))

    def _trained(self, run: Path) -> bool:
        """A run folder with a checkpoint, or an export folder (nmt/export/folder.py)."""
        checkpoints = run / "checkpoints"
        return ((run / "config.yaml").is_file() and checkpoints.is_dir()
                and any(checkpoints.glob("*.pt"))) or is_export_folder(run)

    def require(self, name: str) -> None:
        """UnknownRun (404) unless `name` is a trained run under runs/."""
        if not RUN_NAME.fullmatch(name) or ".." in name:
            raise UnknownRun(f"run {name!r}: a run is named by its folder under runs/ "
                             f"(letters, digits, '_', '-', '.')")
        if not self._trained(self.runs_dir / name):
            raise UnknownRun(f"run {name!r}: no trained run of that name under "
                             f"{self.runs_dir}/ (trained: {', '.join(self.names()) or 'none'}"
                             f"; `make train` makes one)")

    def get(self, name: str | None = None) -> Batcher:
        """The run's Translator (`.translator`) behind its Batcher, loaded on first use (one load
        even when requests race); the default run while it loads in the background: 503."""
        name = name or self.default_run
        batcher = self.loaded(name)
        if batcher is None:
            self.require(name)
            if name == self.default_run and self._loading is not None and self._loading.is_alive():
                raise Overloaded(f"loading the run {name}: not ready yet", 2)
            batcher = self._load(name)
        return batcher

    def loaded(self, name: str | None = None) -> Batcher | None:
        """The run's Batcher if it is loaded (now the most recently used), else None; never
        waits for a load (an async route asks this first)."""
        name = name or self.default_run
        with self._index:
            batcher = self._loaded.get(name)
            if batcher is not None:
                self._loaded.move_to_end(name)
            return batcher

    def _load(self, name: str) -> Batcher:
        with self._lock:
            loaded = self.loaded(name)
            if loaded is not None:
                return loaded
            log.info("loading run %s", name)
            plan = (self.default_plan if name == self.default_run and self.default_plan
                    else run_plan(self.runs_dir / name, self.device))
            if plan.pending:
                raise NotMaterialized(
                    f"run {name!r} needs {', '.join(p.name for p in plan.pending)} written before "
                    f"it can be served; run `make eval CONFIG={self.runs_dir / name}/config.yaml` "
                    f"(or nmt.materialize_run) once, then ask again")
            # No forked search workers: forking a process whose threads serve requests could
            # copy a lock one of them holds; a request's batch is small anyway.
            translator = Translator.from_plan(plan.with_search(workers=1))
            # Decoding restores the mode it found, so eval stays eval and no request ever sees
            # dropout switched on.
            if plan.engine is None:  # an engine's export has no PyTorch model
                translator.model.eval()
            batcher = Batcher(translator, self.limits, LineAnswers(translator))
            with self._index:
                self._loaded[name] = batcher
                evicted = self._over_max_runs()
            for old, unloaded in evicted:
                log.info("unloading run %s (serve.max_runs = %d)", old, self.limits.max_runs)
                unloaded.close(timeout=0, reason=f"the run {old} was unloaded to make room for "
                                                 f"another (serve.max_runs = {self.limits.max_runs})")
            return batcher

    def _over_max_runs(self) -> list[tuple[str, Batcher]]:
        """Out of the loaded runs (the caller holds _index): the least recently used ones beyond
        serve.max_runs, never the default run nor the one loaded last."""
        evicted = []
        for name in list(self._loaded)[:-1]:
            if len(self._loaded) <= self.limits.max_runs:
                break
            if name != self.default_run:
                evicted.append((name, self._loaded.pop(name)))
        return evicted

    def load_in_background(self) -> None:
        """Start loading the default run in a thread of its own (check_ready says when); nothing
        when it is loaded or loading already."""
        if self.default_run in self._loaded or self._loading is not None:
            return
        def load() -> None:
            try:
                self.require(self.default_run)
                self._load(self.default_run)
                log.info("ready: run %s loaded", self.default_run)
            except BaseException as error:  # for check_ready's next call: the server stays up
                self._load_error = error
        self._loading = threading.Thread(target=load, name="load", daemon=True)
        self._loading.start()

    def check_ready(self) -> None:
        """Nothing when the default run is loaded; Overloaded (503) while it loads; the error of
        a background load that failed, once: the next call loads it again (the run may have
        been trained or materialized since)."""
        error, self._load_error = self._load_error, None
        if error is not None and self.default_run not in self._loaded:
            self._loading = None  # the next check loads it in this request's thread
            raise error
        if self.default_run not in self._loaded:
            if self._loading is None:  # nothing loads it: load it now
                self.get()
                return
            raise Overloaded(f"loading the run {self.default_run}: not ready yet", 2)

    def drain(self, timeout: float | None = None) -> None:
        """Wait until every run's decoding thread has answered what it holds (a server that
        stops: it accepts no request any more)."""
        with self._index:
            batchers = list(self._loaded.values())
        for batcher in batchers:
            batcher.drain(timeout)
