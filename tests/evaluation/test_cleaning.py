"""data.clean in the report: a run's per-filter counts from its prepared folder's manifest, and
bench/bench_clean.py's cleaning_bench.json, in the ledger and docs/results.md's tables."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from helpers import REPO
from nmt.config.loader import load_config
from nmt.evaluation.cleaning import CLEANING, cleaning_table, noise_section
from nmt.evaluation.ledger import merge, read_ledger
from nmt.evaluation.report import collect_runs
from nmt.evaluation.results_page import BEGIN, END, update_docs

FILTERS = ["data.clean.min_han_share=0.6", "data.clean.markup=drop", "data.clean.max_repeat=5"]
DROPPED = {"han_share": 120, "markup": 30, "repeat": 0}


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def make_run(runs: Path, name: str, overrides: list[str], members: int = 0) -> str:
    """A trained run (config.yaml, train_summary.json) and its members; its data hash."""
    config = load_config(REPO / "configs" / "smoke.yaml", ["data.prepared_dir=prepared", *overrides])
    for folder in [runs / name] + [runs / name / f"member{k}" for k in range(2, 2 + members)]:
        folder.mkdir(parents=True)
        (folder / "config.yaml").write_text(yaml.safe_dump(config.to_dict()), encoding="utf-8")
        _write(folder / "train_summary.json", {"architecture": "rnn", "step": 10, "cpu": "AMD EPYC",
                                               "threads": 2, "dtype": "float32"})
    return config.data_hash()


def write_manifest(data_hash: str, dropped: dict | None) -> None:
    counts = {"pairs_read": 1000, "beyond_max_pairs": 0, "pairs_kept": 800}
    if dropped is not None:
        counts["clean"] = {"dropped": dropped, "markup_stripped": 0}
    _write(Path("prepared") / data_hash / "manifest.json", {"counts": counts})


def bench_record() -> dict:
    kinds = {kind: {"injected": 100, "removed": removed, "share_removed": removed / 100,
                    "by_filter": by}
             for kind, removed, by in (("copy_of_english", 100, {"han_share": 100}),
                                       ("wrong_language", 98, {"latin_share": 50, "han_share": 47,
                                                               "chars_per_word": 1}),
                                       ("misaligned", 21, {"chars_per_word": 21}))}
    return {"bench": "bench/bench_clean.py", "config": "configs/tatoeba_clean.yaml",
            "command": "python bench/bench_clean.py configs/tatoeba_clean.yaml --record runs/bc",
            "machine": "AMD EPYC", "recorded_at": "2026-12-07T06:00:00Z", "rate": 0.3, "seed": 1,
            "corpus_pairs": 1000, "kinds": kinds,
            "surface": {"injected": 200, "removed": 198, "share_removed": 0.99},
            "clean_pairs": {"kept": 686, "lost": 14, "share_lost": 0.02,
                            "by_filter": {"chars_per_word": 12, "numbers": 2}},
            "filter_seconds": 0.5, "filter_pairs": 1000,
            "prepare": {"with_clean": 10.25, "without_clean": 9.5, "ratio": 1.079}}


def test_a_run_with_filters_gets_its_counts_and_a_cleaning_row(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # data.prepared_dir is taken from the current directory
    runs = tmp_path / "runs"
    write_manifest(make_run(runs, "noisy", FILTERS, members=1), DROPPED)
    write_manifest(make_run(runs, "raw", []), None)
    make_run(runs, "elsewhere", [*FILTERS, "data.clean.copies=true"])  # no prepared folder here
    rows = {row["name"]: row for row in collect_runs(runs)}
    assert rows["noisy"]["clean_read"] == 1000 and rows["noisy"]["clean_dropped"] == DROPPED
    for plain in ("raw", "elsewhere", "noisy/member2"):
        assert not any(key in rows[plain] for key in CLEANING)

    table = cleaning_table(list(rows.values()))
    assert table.splitlines()[0] == "| run | pairs read | dropped | han_share | markup |"
    assert "| `noisy` | 1,000 | 150 (15.0%) | 120 | 30 |" in table and "raw" not in table

    page = tmp_path / "results.md"
    page.write_text(f"# Results\n\n{BEGIN}\nold\n{END}\n")
    update_docs(tmp_path / "results.jsonl", collect_runs(runs), runs, page)
    cleaning = page.read_text().split("### Cleaning")[1].split(END)[0]
    assert "| `noisy` | 1,000 | 150 (15.0%) | 120 | 30 |" in cleaning
    assert "elsewhere" not in cleaning and "### Noise removed" not in page.read_text()


def test_the_counts_stay_in_the_ledger_when_the_prepared_folder_is_gone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "runs"
    write_manifest(make_run(runs, "noisy", FILTERS), DROPPED)
    before = merge([], collect_runs(runs), runs)
    assert next(e for e in before if e["name"] == "noisy")["clean_dropped"] == DROPPED
    (Path("prepared").rename("moved"))
    after = merge(before, collect_runs(runs), runs)
    assert after == before  # no churn: the old entry's counts carried over


def test_no_counts_no_cleaning_table(tmp_path):
    entry = {"name": "a", "run": "a", "machine": "AMD EPYC, 2 threads, float32", "test_bleu": 20.0}
    assert cleaning_table([entry]) is None and noise_section([entry]) is None


def test_a_cleaning_bench_gives_the_noise_removed_table(tmp_path):
    runs = tmp_path / "runs"
    _write(runs / "bc" / "cleaning_bench.json", bench_record())
    old = {"name": "a", "run": "a", "machine": "AMD EPYC, 2 threads, float32", "test_bleu": 20.0,
           "source": "runs/a"}
    ledger = tmp_path / "results.jsonl"
    ledger.write_text(json.dumps(old) + "\n")
    page = tmp_path / "results.md"
    page.write_text(f"# Results\n\n{BEGIN}\nold\n{END}\n")
    assert update_docs(ledger, collect_runs(runs), runs, page) == 2
    entries = read_ledger(ledger)
    assert old in entries
    bench = next(e for e in entries if e["name"] == "bc")
    assert bench["machine"] == "AMD EPYC" and bench["cleaning_bench"] == bench_record()
    text = page.read_text()
    machines, noise = text.split("### Noise removed")
    assert "| bc |" not in machines and "| a |" in machines  # no run's row
    assert "`python bench/bench_clean.py configs/tatoeba_clean.yaml --record runs/bc` on AMD EPYC" in noise
    assert "30% of 1,000 pairs noised, seed 1" in noise
    assert "| kind | injected | removed | removed by |" in noise
    assert "| copy_of_english | 100 | 100.0% | han_share 100 |" in noise
    assert "| wrong_language | 100 | 98.0% | latin_share 50, han_share 47, others 1 |" in noise
    assert "| surface kinds (all but misaligned) | 200 | 99.0% | |" in noise
    assert "Clean pairs lost: 2.00% (14 of 700; chars_per_word 12, numbers 2)." in noise
    assert "10.2 s with data.clean, 9.5 s without (×1.08)" in noise

    update_docs(ledger, collect_runs(runs), runs, page)  # again: the same ledger
    assert read_ledger(ledger) == entries
