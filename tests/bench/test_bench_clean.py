"""bench/bench_clean.py: the figures it prints, written by --record to DIR/cleaning_bench.json, and
the dual scores of the trained smoke run (scripts/dual_score.py) dropping pairs through the
filters prepare makes, or stopping it when they are of another corpus."""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from helpers import REPO
from nmt.evaluation.cleaning import bench_rows, noise_section


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_clean", REPO / "bench" / "bench_clean.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figures_count_each_kind_and_the_clean_pairs():
    bench = load_bench()
    outcome = {"clean": Counter(kept=95, numbers=5), "markup": Counter(markup=9, kept=1),
               "misaligned": Counter(kept=8, chars_per_word=2)}
    found = bench.figures(outcome, 0.25, None)
    assert found["kinds"]["markup"] == {"injected": 10, "removed": 9, "share_removed": 0.9,
                                        "by_filter": {"markup": 9}}
    assert found["kinds"]["repeated"] == {"injected": 0, "removed": 0, "share_removed": 0.0,
                                          "by_filter": {}}
    assert found["surface"] == {"injected": 10, "removed": 9, "share_removed": 0.9}  # not misaligned
    assert found["clean_pairs"] == {"kept": 95, "lost": 5, "share_lost": 0.05,
                                    "by_filter": {"numbers": 5}}
    assert (found["filter_pairs"], found["filter_seconds"], found["prepare"]) == (120, 0.25, None)


def test_record_writes_what_the_report_reads(tmp_path, tiny_corpus, capsys, monkeypatch):
    bench = load_bench()
    folder = tmp_path / "runs" / "bench_clean"
    argv = ["bench/bench_clean.py", "configs/tatoeba_clean.yaml", f"data.corpus={tiny_corpus}",
            "--record", str(folder)]
    monkeypatch.setattr("sys.argv", argv)
    bench.main(argparse.Namespace(config=str(REPO / "configs" / "tatoeba_clean.yaml"),
                                  overrides=[f"data.corpus={tiny_corpus}"], rate=0.3, seed=1,
                                  out=None, prepare=False, record=str(folder)))
    out = capsys.readouterr().out
    assert f"recorded {folder / 'cleaning_bench.json'}" in out.splitlines()[-1]
    record = json.loads((folder / "cleaning_bench.json").read_text(encoding="utf-8"))
    assert (record["rate"], record["seed"], record["corpus_pairs"]) == (0.3, 1, 200)
    assert record["command"].startswith("python bench/bench_clean.py configs/tatoeba_clean.yaml")
    assert record["clean"]["min_han_share"] == 0.6 and record["prepare"] is None
    assert list(record["kinds"]) == list(bench.KINDS) and record["machine"]
    injected = sum(kind["injected"] for kind in record["kinds"].values())
    clean = record["clean_pairs"]
    assert injected + clean["kept"] + clean["lost"] == 200
    for kind, found in record["kinds"].items():  # the line it printed for the kind
        line = next(line for line in out.splitlines() if line.startswith(f"{kind} "))
        assert f"{found['injected']:6d} pairs, removed {100 * found['share_removed']:5.1f}%" in line

    rows = bench_rows(tmp_path / "runs")
    assert [row["name"] for row in rows] == ["bench_clean"]
    assert "| copy_of_english |" in noise_section(rows)


def test_prepare_is_timed_with_and_without_the_filters(monkeypatch):
    bench = load_bench()
    commands = []

    def fake_run(command, **_):
        commands.append(command)
        return argparse.Namespace(returncode=0, stderr="")

    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    clock = iter(range(100))
    monkeypatch.setattr(bench.time, "perf_counter", lambda: float(next(clock)) ** 2)
    args = argparse.Namespace(config="configs/tatoeba_clean.yaml", overrides=["data.workers=1"])
    pair = bench.Pair("汤姆喜欢猫。", "Tom likes cats.", 1)
    found = bench.timed_prepares(args, [(pair, "clean")])
    assert len(commands) == 4  # without, with, without, with
    without, with_clean = commands[0], commands[1]
    assert "data.clean.min_han_share=null" in without and 'data.clean.markup="keep"' in without
    assert not any(part.startswith("data.clean.") for part in with_clean)
    assert with_clean[2:4] == ["configs/tatoeba_clean.yaml", "data.workers=1"]
    # the clock's spans are 1, 5, 9 and 13 s: the faster of each setting is its first
    assert found == {"without_clean": 1.0, "with_clean": 5.0, "ratio": 5.0}


def dual_scores_of(run, monkeypatch) -> str:
    """scripts/dual_score.py on `run` (in this process): its runs/<name>/dual_scores.tsv."""
    import runpy
    import sys

    import torch

    script = REPO / "scripts" / "dual_score.py"
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the script sets it; undone after
    monkeypatch.setattr(sys, "argv", [str(script), *run.args()])
    threads = torch.get_num_threads()
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        torch.set_num_threads(threads)
    return str(run.config.run_dir / "dual_scores.tsv")


@pytest.mark.e2e
def test_the_dual_scores_of_a_trained_run_drop_pairs_as_prepare_would(trained_copy, monkeypatch,
                                                                     run_bench):
    scores = dual_scores_of(trained_copy, monkeypatch)
    corpus = trained_copy.config.data.corpus.files()[0]
    config = str(REPO / "configs" / "tatoeba_clean.yaml")
    status, out, err = run_bench("bench_clean.py", [
        config, f"data.corpus={corpus}", f"data.clean.dual_scores={scores}",
        "data.clean.dual_drop=0.2"])
    assert status == 0, err
    dropped = [int(count) for count in re.findall(r"\bdual (\d+)", out)]
    # the worst fifth of the run's training pairs, less those a surface filter dropped first
    scored = len(Path(scores).read_text(encoding="utf-8").splitlines()) - 1  # less the header
    assert dropped and 0 < sum(dropped) <= round(0.2 * scored)
    assert f"dual_scores='{scores}'" in out and "filters ran over 200 pairs" in out


@pytest.mark.e2e
def test_dual_scores_of_another_corpus_stop_the_bench(trained, tmp_path, run_bench):
    scores = tmp_path / "other.tsv"
    scores.write_text("line\th_forward\th_reverse\tscore\n" + "".join(
        f"{n}\t1.0\t1.0\t{n / 100}\n" for n in range(5001, 5021)), encoding="utf-8")
    status, out, err = run_bench("bench_clean.py", [
        str(REPO / "configs" / "tatoeba_clean.yaml"),
        f"data.corpus={trained.config.data.corpus.files()[0]}",
        f"data.clean.dual_scores={scores}", "data.clean.dual_drop=0.1"])
    assert status == 2 and f"none of the 20 lines scored in {scores}" in err
    assert "the noised copy of" in err and "scripts/dual_score.py" in err
    assert "filters ran over" not in out
