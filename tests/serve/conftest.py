"""A runs/ folder with two trained-looking runs (random weights: no training needed): a
recurrent model and a Transformer, both reading the words of tests/random_checkpoint.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from random_checkpoint import write_random_checkpoint
from nmt.config.loader import save_config
from nmt.config.schema import Config
from nmt.serve.runs import RunRegistry


def make_run(runs: Path, name: str, smoke: Config, architecture: str) -> None:
    config = dataclasses.replace(smoke, name=name, runs_dir=str(runs),
                                 model=dataclasses.replace(smoke.model, architecture=architecture),
                                 training=dataclasses.replace(smoke.training, device="cpu"))
    (runs / name / "checkpoints").mkdir(parents=True)
    save_config(config, runs / name / "config.yaml")
    write_random_checkpoint(runs / name / "checkpoints" / "best.pt", config)


@pytest.fixture
def registry(tmp_path: Path, smoke: Config) -> RunRegistry:
    runs = tmp_path / "runs"
    make_run(runs, "rnn", smoke, "rnn")
    make_run(runs, "transformer", smoke, "transformer")
    (runs / "untrained").mkdir()  # a folder without a checkpoint is no run
    return RunRegistry(runs, "rnn", device="cpu")
