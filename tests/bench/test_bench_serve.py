"""bench/bench_serve.py: the size on disk of what a plan decodes with, the process's memory, and
(end to end, on a tiny random run) the serving.<label>.json that --record writes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from helpers import REPO
from random_checkpoint import write_random_run
from nmt.decoding.plan import DecodingPlan, RescoringModel

MB = 2 ** 20
KEYS = {"requests_per_second", "clients", "requests", "failed", "median_ms", "p90_ms",
        "rss_mb_before", "rss_mb_loaded", "rss_mb_peak", "disk_mb", "beam", "machine", "threads", "label"}


@pytest.fixture
def bench(monkeypatch):
    # its first line sets OMP_WAIT_POLICY (a default only): keep this process's as it was
    monkeypatch.setenv("OMP_WAIT_POLICY", os.environ.get("OMP_WAIT_POLICY", "PASSIVE"))
    spec = importlib.util.spec_from_file_location("bench_serve", REPO / "bench" / "bench_serve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plan(checkpoints=(), rescoring=(), engine=None) -> DecodingPlan:
    return DecodingPlan(None, tuple(checkpoints), None, tuple(rescoring), None, "cpu",  # type: ignore[arg-type]
                        engine=engine)


def test_disk_mb_counts_an_engines_whole_folder_else_checkpoints_and_rescorers(bench, tmp_path):
    export = tmp_path / "export.int8"
    (export / "engine").mkdir(parents=True)
    (export / "engine" / "model.bin").write_bytes(b"\0" * MB)
    (export / "zh.vocab").write_bytes(b"\0" * (MB // 2))
    checkpoint = tmp_path / "best.pt"
    checkpoint.write_bytes(b"\0" * (3 * MB))
    assert bench.disk_mb(_plan([checkpoint], engine=export)) == 1.5  # the folder, not the .pt
    channel = tmp_path / "channel.pt"
    channel.write_bytes(b"\0" * MB)
    rescorer = RescoringModel(channel, 0.5, True, "left_to_right")
    assert bench.disk_mb(_plan([checkpoint, checkpoint], [rescorer])) == 4.0  # each file once


def test_memory_figures_come_from_proc_status(bench, tmp_path):
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmHWM:\t  3072 kB\nVmRSS:\t  2048 kB\n")
    assert bench.status_mb("VmRSS", status) == 2.0 and bench.status_mb("VmHWM", status) == 3.0
    assert bench.status_mb("VmSwap", status) is None
    assert bench.status_mb("VmRSS", tmp_path / "none") is None
    if sys.platform == "linux":
        assert bench.status_mb("VmHWM") >= bench.status_mb("VmRSS") > 0


@pytest.mark.e2e
def test_record_writes_the_serving_figures_of_the_plans_label(smoke_config):
    write_random_run(smoke_config.run_dir.parent, "smoke", replace(smoke_config, name="smoke"))
    done = subprocess.run(
        [sys.executable, "bench/bench_serve.py", str(REPO / "configs" / "smoke.yaml"),
         f"data.corpus={smoke_config.data.corpus}", f"data.prepared_dir={smoke_config.data.prepared_dir}",
         f"runs_dir={smoke_config.runs_dir}", "training.threads=1", "--requests", "6",
         "--clients", "2", "--beam", "2", "--record"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "0 failed" in done.stdout and "MB on disk" in done.stdout
    figures = json.loads((smoke_config.run_dir / "serving.best.json").read_text())
    assert KEYS <= set(figures) and figures["label"] == "best" and figures["failed"] == 0
    assert figures["requests"] == 6 and figures["clients"] == 2 and figures["disk_mb"] > 0
    assert figures["rss_mb_peak"] >= figures["rss_mb_loaded"] >= figures["rss_mb_before"] > 0
