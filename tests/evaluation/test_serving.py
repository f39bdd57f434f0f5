"""serving.<label>.json (bench/bench_serve.py --record) on the row of results.<label>.json, in the
ledger and in docs/results.md's Serving table; rows without one gain no keys."""

from __future__ import annotations

import json
from pathlib import Path

from nmt.evaluation.ledger import SERVING, merge, read_ledger
from nmt.evaluation.report import collect_runs
from nmt.evaluation.results_page import BEGIN, END, serving_table, update_docs

AMD = "AMD EPYC, 2 threads, float32"


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _serving(label: str, rate: float, failed: int = 0, clients: int = 8) -> dict:
    return {"run": "x", "label": label, "machine": "AMD EPYC", "threads": 2, "beam": 5,
            "requests_per_second": rate, "clients": clients, "requests": 200, "failed": failed,
            "median_ms": 20.0, "p90_ms": 30.0, "rss_mb_before": 300.0, "rss_mb_loaded": 400.0, "rss_mb_peak": 612.4,
            "disk_mb": 24.56}


def make_runs(runs: Path) -> None:
    """A teacher (ensemble, reranked) and a student (engine, int8 and float32), each trained on
    the AMD machine; the student's float32 has no serving figures."""
    for name in ("tatoeba", "tatoeba_student"):
        _write(runs / name / "train_summary.json", {"architecture": "rnn", "step": 100,
                                                     "cpu": "AMD EPYC", "threads": 2,
                                                     "dtype": "float32"})
    teacher = "ensemble.average_best5.rerank"
    _write(runs / "tatoeba" / f"results.{teacher}.json",
           {"split": "test", "bleu": 36.5, "sentences_per_second": 12.3, "label": teacher})
    _write(runs / "tatoeba" / f"serving.{teacher}.json", _serving(teacher, 9.87, failed=1))
    for label, bleu in (("ctranslate2-int8", 34.2), ("ctranslate2-float32", 34.4)):
        _write(runs / "tatoeba_student" / f"results.{label}.json",
               {"split": "test", "bleu": bleu, "sentences_per_second": 310.0, "label": label})
    _write(runs / "tatoeba_student" / "results.ctranslate2-int8.dev.json",  # its dev score
           {"split": "dev", "bleu": 33.1, "sentences_per_second": 300.0, "label": "ctranslate2-int8"})
    _write(runs / "tatoeba_student" / "serving.ctranslate2-int8.json",
           _serving("ctranslate2-int8", 154.25, clients=4))


def test_a_serving_file_puts_its_figures_on_the_row_of_its_label(tmp_path):
    make_runs(tmp_path)
    rows = {row["name"]: row for row in collect_runs(tmp_path)}
    teacher = rows["tatoeba (ensemble.average_best5.rerank)"]
    assert teacher["requests_per_second"] == 9.87 and teacher["serve_failed"] == 1
    assert teacher["disk_mb"] == 24.56 and teacher["serve_mb_peak"] == 612.4
    assert teacher["serve_mb_models"] == 312.4
    assert teacher["serve_machine"] == "AMD EPYC, 2 threads" and teacher["serve_clients"] == 8
    assert rows["tatoeba_student (ctranslate2-int8)"]["requests_per_second"] == 154.25
    for plain in ("tatoeba", "tatoeba_student", "tatoeba_student (ctranslate2-float32)",
                  "tatoeba_student (ctranslate2-int8.dev)"):
        assert not any(key in rows[plain] for key in SERVING)

    entries = {e["name"]: e for e in merge([], collect_runs(tmp_path), tmp_path)}
    assert entries["tatoeba (ensemble.average_best5.rerank)"]["serve_mb_peak"] == 612.4
    assert entries["tatoeba_student (ctranslate2-int8)"]["disk_mb"] == 24.56
    assert not any(key in entries["tatoeba_student (ctranslate2-float32)"] for key in SERVING)


def test_the_serving_table_lists_the_rows_with_serving_figures(tmp_path):
    runs = tmp_path / "runs"
    make_runs(runs)
    old = {"name": "gone", "run": "gone", "machine": AMD, "source": "runs/gone", "test_bleu": 20.0}
    ledger = tmp_path / "results.jsonl"
    ledger.write_text(json.dumps(old) + "\n")
    page = tmp_path / "results.md"
    page.write_text(f"# Results\n\n{BEGIN}\nold\n{END}\n")
    update_docs(ledger, collect_runs(runs), runs, page)
    assert old in read_ledger(ledger)  # a row without serving figures is kept as it was
    text = page.read_text()
    serving = text.split("### Serving")[1].split(END)[0]
    assert ("| run (label) | machine | dev BLEU | test BLEU | ± 95% | len. ratio | sentences/s (make eval) | "
            "requests/s @8 clients "
            "| failed | disk MB | serve MB (peak) | of which models MB |") in serving
    assert ("| `tatoeba (ensemble.average_best5.rerank)` | AMD EPYC, 2 threads | - | 36.50 | - | - | 12 | 9.9 "
            "| 1 | 24.6 | 612 | 312 |") in serving
    assert "| `tatoeba_student (ctranslate2-int8)` | AMD EPYC, 2 threads | 33.10 | 34.20 | - | - | 310 | " \
           "154.2 (4 clients) | 0 | 24.6 | 612 | 312 |" in serving
    assert "ctranslate2-float32" not in serving and "| gone |" in text.split("### Serving")[0]


def test_no_serving_figures_no_serving_table(tmp_path):
    entry = {"name": "a", "run": "a", "machine": AMD, "test_bleu": 20.0}
    assert serving_table([entry]) is None
