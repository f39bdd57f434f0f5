"""bench/bench_prepare.py: the synthetic corpora it makes, its timing of prepare on the trained
smoke run's corpus, and bench/startup.py's first step, fresh and going on from a trained run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO, tiny_corpus_pairs


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_prepare", REPO / "bench" / "bench_prepare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_synthetic_corpus_joins_one_to_three_real_pairs_a_line(tmp_path, tiny_corpus):
    bench = load_bench()
    pairs = bench.read_pairs(tiny_corpus)
    assert pairs == [(en, zh) for en, zh in tiny_corpus_pairs()]  # the BOM is not in the first

    path = bench.make_synthetic(pairs, 500, tmp_path / "synthetic.tsv", seed=3)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == 501  # 500 lines, each ending in \n
    sizes = set()
    for line in lines[:-1]:
        en, zh, credit = line.split("\t")
        chosen = [pairs[int(i) - 1] for i in credit.removeprefix("synthetic: pairs ").split("+")]
        sizes.add(len(chosen))
        assert en == " ".join(p[0] for p in chosen) and zh == "".join(p[1] for p in chosen)
    assert sizes == {1, 2, 3}
    assert not list(tmp_path.glob("*.partial"))

    again = bench.make_synthetic(pairs, 500, tmp_path / "again.tsv", seed=3)
    other = bench.make_synthetic(pairs, 500, tmp_path / "other.tsv", seed=4)
    assert again.read_bytes() == path.read_bytes() != other.read_bytes()


def test_a_synthetic_corpus_reads_as_the_corpus_format(tmp_path, tiny_corpus):
    from nmt.data.corpus import read_corpus

    bench = load_bench()
    path = bench.make_synthetic(bench.read_pairs(tiny_corpus), 50, tmp_path / "synthetic.tsv")
    corpus = read_corpus(path)
    assert len(corpus.pairs) == 50 and not corpus.skipped


def test_the_memory_of_a_process_tree_counts_its_children():
    bench = load_bench()
    child = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(1)'])"
    seconds, tree_mb, proc_mb, _ = bench.run_measured([sys.executable, "-c", child])
    assert seconds >= 1 and tree_mb > proc_mb > 0  # two interpreters at once


@pytest.mark.e2e
def test_a_corpus_is_prepared_and_trained_from_fresh_processes_and_tabled(trained, tmp_path, capsys):
    bench = load_bench()  # what --synthetic does for each corpus: prepare, then start training
    corpus = trained.config.data.corpus.files()[0]
    row = bench.measure(str(REPO / "configs" / "smoke.yaml"), corpus, tmp_path, 1)
    assert (row["lines"], row["pairs"]) == (200, trained_pairs(trained))
    assert row["prepare_seconds"] > 0 and row["prepare_tree_mb"] >= row["prepare_proc_mb"] > 0
    startup = row["startup"]
    assert 0 < startup["seconds"]["first_step"] < startup["seconds_to_first_step"]
    assert startup["rss_mb_at_first_step"] > startup["rss_mb_before_data"] > 0
    assert startup["train_pairs"] > 0 and startup["dtype"] in ("float32", "bfloat16")
    assert startup["resumed_at_step"] == 0  # a fresh model
    bench.print_table([("real", row)], 1)
    table = capsys.readouterr().out.splitlines()
    assert table[-2].split()[:3] == ["real", "200", str(row["pairs"])]
    assert table[-1].startswith("training RSS growth real → real: +0 MB")


def trained_pairs(run) -> int:
    prepared = Path(run.config.data.prepared_dir)
    manifest = json.loads(next(prepared.glob("*/manifest.json")).read_text(encoding="utf-8"))
    return manifest["counts"]["pairs_kept"]


@pytest.mark.e2e
def test_startup_goes_on_from_a_trained_runs_last_checkpoint(trained_copy):
    result = subprocess.run([sys.executable, str(REPO / "bench" / "startup.py"), *trained_copy.args()],
                            cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, BENCH_T0=""))  # the /proc start time
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["resumed_at_step"] == 6  # the trained run's last.pt
    assert 0 < report["seconds"]["first_step"] < report["seconds_to_first_step"]
    assert report["train_pairs"] > 0 and report["threads"] == 1


@pytest.mark.e2e
def test_the_bench_times_prepare_cold_and_cached_on_a_runs_corpus(trained):
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_prepare.py"),
         str(trained.config.data.corpus.files()[0]), "--config", str(REPO / "configs" / "smoke.yaml"), "--workers", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("machine: ") and "torch threads 1" in done.stdout
    assert re.search(r"workers=1: cold [\d.]+ s \(prepare itself [\d.]+ s\), cached [\d.]+ s",
                     done.stdout), done.stdout
    assert f"pairs kept {trained_pairs(trained)}," in done.stdout  # as the run's prepare
