"""Shared fixtures: a tiny synthetic corpus (tests/helpers.py) and the smoke config around it."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import REPO, write_tiny_corpus
from nmt.config.loader import load_config
from nmt.config.schema import Config


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """A 200-pair synthetic corpus file in tmp_path."""
    return write_tiny_corpus(tmp_path / "raw" / "cmn.txt")


@pytest.fixture
def smoke_config(tmp_path: Path, tiny_corpus: Path) -> Config:
    """configs/smoke.yaml with its corpus, prepared data and runs all inside tmp_path."""
    return load_config(REPO / "configs" / "smoke.yaml", [
        f"data.corpus={tiny_corpus}",
        f"data.prepared_dir={tmp_path / 'prepared'}",
        f"runs_dir={tmp_path / 'runs'}",
    ])


@pytest.fixture
def smoke(tmp_path: Path) -> Config:
    """configs/smoke.yaml with its runs in tmp_path (the corpus is not needed: random checkpoints)."""
    return load_config(REPO / "configs" / "smoke.yaml", [f"runs_dir={tmp_path / 'runs'}"])
