"""A runs/ folder with two trained-looking runs (random weights: no training needed): a
recurrent model and a Transformer (tests/random_checkpoint.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from random_checkpoint import write_random_run
from nmt.config.schema import Config
from nmt.serve.runs import RunRegistry


@pytest.fixture
def registry(tmp_path: Path, smoke: Config) -> RunRegistry:
    runs = tmp_path / "runs"
    write_random_run(runs, "rnn", smoke, "rnn")
    write_random_run(runs, "transformer", smoke, "transformer")
    (runs / "untrained").mkdir()  # a folder without a checkpoint is no run
    return RunRegistry(runs, "rnn", device="cpu")
