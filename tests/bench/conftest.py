"""A smoke run trained once per session for every benchmark's test: a forward model and a channel
member (as the default trains), a few steps, so each bench runs against what training leaves,
not only random weights, and a method it calls that is gone fails here. Tests that write into a
run folder get a copy of it; the benches run in this process where they can (no second torch
import), with bench/ importable as when run as a script."""

from __future__ import annotations

import runpy
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from helpers import REPO, write_tiny_corpus
from nmt.config.loader import load_config
from nmt.config.schema import Config

SMOKE = REPO / "configs" / "smoke.yaml"
# members=1 and channel_members=1: a forward model in runs/smoke/, its reverse (channel) model
# in runs/smoke/member2/; validation at the last step writes best.pt beside last.pt
RECIPE = ["training.members=1", "training.channel_members=1", "training.max_steps=6",
          "training.validate_every=6", "training.checkpoint_every=6", "training.device=cpu",
          "training.threads=1"]


@dataclass(frozen=True)
class TrainedRun:
    config: Config
    overrides: tuple[str, ...]  # the command line's key=value after configs/smoke.yaml

    def args(self, *more: str) -> list[str]:
        """A bench's command line for this run: the config, its overrides, `more`."""
        return [str(SMOKE), *self.overrides, *more]

    @property
    def checkpoint(self) -> Path:
        return self.config.run_dir / "checkpoints" / "best.pt"

    @property
    def channel(self) -> Path:
        return self.config.run_dir / "member2" / "checkpoints" / "best.pt"


def _with_runs_dir(run: TrainedRun, runs: Path) -> TrainedRun:
    overrides = tuple(o for o in run.overrides if not o.startswith("runs_dir=")) + (f"runs_dir={runs}",)
    return TrainedRun(load_config(SMOKE, list(overrides)), overrides)


@pytest.fixture(scope="session")
def trained(tmp_path_factory) -> TrainedRun:
    """configs/smoke.yaml trained for 6 steps on the tiny corpus, with a channel member.
    Read it only: a test that writes into a run folder takes `trained_copy`."""
    from nmt.training.loop import train

    folder = tmp_path_factory.mktemp("trained")
    corpus = write_tiny_corpus(folder / "raw" / "cmn.txt")
    overrides = (f"data.corpus={corpus}", f"data.prepared_dir={folder / 'prepared'}",
                 f"runs_dir={folder / 'runs'}", *RECIPE)
    config = load_config(SMOKE, list(overrides))
    threads = torch.get_num_threads()
    try:
        train(config)
    finally:
        torch.set_num_threads(threads)
    run = TrainedRun(config, overrides)
    assert run.checkpoint.is_file() and run.channel.is_file()
    return run


@pytest.fixture
def trained_copy(trained: TrainedRun, tmp_path: Path) -> TrainedRun:
    """The trained run's runs/ folder copied into tmp_path (its prepared data shared), its saved
    configs' runs_dir saying where it is now: training resumes only a run whose saved runs_dir
    is the one given (nmt/training/run_dir.py)."""
    runs = shutil.copytree(trained.config.runs_dir, tmp_path / "copied_runs")
    for saved in runs.glob("**/config.yaml"):
        text = saved.read_text(encoding="utf-8")
        saved.write_text(text.replace(f"runs_dir: {trained.config.runs_dir}", f"runs_dir: {runs}"),
                         encoding="utf-8")
    return _with_runs_dir(trained, runs)


@pytest.fixture
def before_training(trained: TrainedRun, tmp_path: Path) -> TrainedRun:
    """The same experiment, prepared, with an empty runs/ folder: `make bench` before `make train`."""
    return _with_runs_dir(trained, tmp_path / "empty_runs")


@pytest.fixture
def run_bench(monkeypatch, capsys):
    """bench/<name> run as a script in this process: (exit status, stdout, stderr; a
    sys.exit(message)'s message at its end). Its torch threads and OMP_WAIT_POLICY are put back
    afterwards."""
    monkeypatch.syspath_prepend(str(REPO / "bench"))  # as `python bench/<name>` sees its folder
    threads = torch.get_num_threads()

    def run(name: str, arguments: list[str]) -> tuple[int, str, str]:
        script = REPO / "bench" / name
        monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the scripts set it; undone after
        monkeypatch.setattr(sys, "argv", [str(script), *arguments])
        capsys.readouterr()
        status, message = 0, ""
        try:
            runpy.run_path(str(script), run_name="__main__")
        except SystemExit as exit:  # run_cli's exit 2 on an NMTError, or sys.exit(message)
            code = exit.code
            status = code if isinstance(code, int) else 0 if code is None else 1
            message = code if isinstance(code, str) else ""
        finally:
            torch.set_num_threads(threads)
        out, err = capsys.readouterr()
        return status, out, err + message

    return run
