"""bench/bench_serve.py: the size on disk of what a plan decodes with, the process's memory, the
sentences it sends, and (end to end, on the trained smoke run) the serving.<label>.json that
--record writes, naming the models it served."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from helpers import REPO
from nmt.decoding.plan import DecodingPlan, RescoringModel
from nmt.errors import NMTError

MB = 2 ** 20
KEYS = {"requests_per_second", "clients", "requests", "failed", "median_ms", "p90_ms",
        "rss_mb_before", "rss_mb_loaded", "rss_mb_peak", "disk_mb", "beam", "machine", "threads", "label",
        "models"}


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


def test_it_sends_dev_sentences_or_a_fixed_list_only_where_nothing_is_prepared(bench, smoke,
                                                                              tmp_path, capsys):
    unprepared = replace(smoke, data=replace(smoke.data, prepared_dir=str(tmp_path / "none")))
    assert bench.sentences(unprepared) == bench.FALLBACK
    assert "is not prepared: sending 4 fixed sentences" in capsys.readouterr().err
    damaged = Path(unprepared.data.prepared_dir) / unprepared.data_hash()
    damaged.mkdir(parents=True)
    (damaged / "manifest.json").write_text("{}", encoding="utf-8")  # another data hash
    with pytest.raises(NMTError, match="written for other data settings"):
        bench.sentences(unprepared)


@pytest.mark.e2e
def test_record_writes_the_serving_figures_of_the_trained_runs_plan(trained_copy):
    done = subprocess.run(
        [sys.executable, "bench/bench_serve.py", *trained_copy.args(
            "--requests", "6", "--clients", "2", "--beam", "2", "--record")],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "0 failed" in done.stdout and "MB on disk" in done.stdout
    models = f"{trained_copy.checkpoint} rescored by {trained_copy.channel}"
    [model] = [line for line in done.stdout.splitlines() if line.startswith("model     ")]
    assert model.startswith("model     runs/smoke (") and f": {models}) loaded in" in model
    figures = json.loads((trained_copy.config.run_dir / f"serving.{figures_label(model)}.json"
                          ).read_text())
    assert KEYS <= set(figures) and figures["models"] == models and figures["failed"] == 0
    assert figures["requests"] == 6 and figures["clients"] == 2 and figures["disk_mb"] > 0
    assert figures["rss_mb_peak"] >= figures["rss_mb_loaded"] >= figures["rss_mb_before"] > 0


def figures_label(model_line: str) -> str:
    """The label in "model     runs/smoke (LABEL: files) loaded in ...": its results file's."""
    return model_line.split("(", 1)[1].split(":", 1)[0]
