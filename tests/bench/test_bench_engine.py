"""bench/bench_engine.py measures each export folder of a trained Transformer run, naming the
checkpoint each was exported from; bench/bench_decode.py measures such a run's engine too."""

from __future__ import annotations

import hashlib
import re

import pytest
import torch

from helpers import REPO
from nmt.config.loader import load_config
from nmt.decoding.plan import plan_for

pytestmark = pytest.mark.e2e

TRANSFORMER = REPO / "configs" / "smoke_transformer.yaml"


@pytest.fixture(scope="module")
def student(trained, tmp_path_factory):
    """configs/smoke_transformer.yaml trained 4 steps on the trained run's data, decoded by
    CTranslate2: its int8 export written by the plan, and a float32 one."""
    from nmt.training.loop import train

    runs = tmp_path_factory.mktemp("student") / "runs"
    overrides = [o for o in trained.overrides if o.startswith(("data.", "training.device"))] + [
        f"runs_dir={runs}", "training.max_steps=4", "training.validate_every=4",
        "training.checkpoint_every=4", "training.threads=1", "export.engine=ctranslate2"]
    threads = torch.get_num_threads()
    try:
        train(load_config(TRANSFORMER, overrides))
        for quantization in ("int8", "float32"):
            plan_for(load_config(TRANSFORMER, [*overrides, f"export.quantization={quantization}"]))
    finally:
        torch.set_num_threads(threads)
    return overrides, runs / "smoke_transformer"


def test_each_export_folder_is_measured_and_names_its_trained_checkpoint(student, run_bench):
    overrides, run_dir = student
    status, out, err = run_bench("bench_engine.py", [str(TRANSFORMER), *overrides, "--beams", "2"])
    assert status == 0, err
    sha = hashlib.sha256((run_dir / "checkpoints" / "best.pt").read_bytes()).hexdigest()
    folders = sorted(path.name for path in run_dir.glob("export.*"))
    assert len(folders) == 2
    made = [line.split()[0] for line in out.splitlines()
            if f"exported from best.pt (sha256 {sha[:12]}, step 4)" in line]
    assert made == folders
    measured = [line.split()[:7] for line in out.splitlines() if "sentences/s" in line]
    # training.threads=1: one worker (search.workers counts batches side by side up to threads)
    assert measured == [[folder, "workers", "1", "beam", "2", scores, "scores:"]
                        for folder in folders for scores in ("exact", "engine's")]


def test_the_decoding_bench_measures_the_runs_engine(student, run_bench):
    overrides, run_dir = student
    status, out, err = run_bench("bench_decode.py", [str(TRANSFORMER), *overrides, "--limit", "6",
                                                     "--beam", "2", "--batch", "4"])
    assert status == 0, err
    [model] = [line for line in out.splitlines() if line.startswith("model       ")]
    assert re.match(rf"model       {re.escape(str(run_dir / 'checkpoints' / 'best.pt'))}: "
                    r"ctranslate2 [\d.]+, int8 \(.*export\.int8.*\), transformer", model), model
    assert "random init" not in out + err and "search      " in out
