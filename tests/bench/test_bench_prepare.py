"""bench/bench_prepare.py: the synthetic corpora it makes, and bench/startup.py's first step."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from helpers import REPO, tiny_corpus_pairs
from nmt.data.prepare import prepare


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
def test_startup_reports_its_first_step(smoke_config, tmp_path):
    prepare(smoke_config)
    data = smoke_config.data
    command = [sys.executable, str(REPO / "bench" / "startup.py"), str(REPO / "configs" / "smoke.yaml"),
               f"data.corpus={data.corpus}", f"data.prepared_dir={data.prepared_dir}",
               "training.members=1", "training.max_steps=1", "training.validate_every=1000000",
               "name=startup", f"runs_dir={tmp_path / 'runs'}"]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, BENCH_T0=""))  # the /proc start time
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert 0 < report["seconds"]["first_step"] < report["seconds_to_first_step"]
    assert report["rss_mb_at_first_step"] > report["rss_mb_before_data"] > 0
    assert report["train_pairs"] > 0 and report["dtype"] in ("float32", "bfloat16")
