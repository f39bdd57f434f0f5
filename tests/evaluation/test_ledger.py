"""docs/results.jsonl: the runs here merged in, every generated block written from it alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nmt.errors import NMTError
from nmt.evaluation.ledger import merge, read_ledger, write_ledger
from nmt.evaluation.report import collect_runs
from nmt.evaluation.results_page import ALIGNMENT, RECIPES, markers, update_docs

AMD = "AMD EPYC, 2 threads, float32"
SIGNATURES = {"signature": "nrefs:1|tok:13a", "chrf_signature": "nrefs:1|nc:6"}


def _entry(name: str, machine: str = AMD, **values) -> dict:
    run = name.split(" ")[0]
    return {"name": name, "run": run, "machine": machine, "source": "by hand", **values}


def _run(runs: Path, name: str, bleu: float, members: int = 1, command: str | None = None) -> None:
    """A finished run on the AMD machine, evaluated as `make eval` does for its config."""
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "train_summary.json").write_text(json.dumps({
        "architecture": "rnn", "attention": "additive", "step": 100, "train_seconds": 1800.0,
        "cpu": "AMD EPYC", "threads": 2, "dtype": "float32"}))
    (folder / "config.yaml").write_text(yaml.safe_dump({
        "training": {"members": members}, "eval": {"average": "best:5"}}))
    label = "ensemble.average_best5" if members > 1 else "average_best5"
    (folder / f"results.{label}.json").write_text(json.dumps({
        "split": "test", "bleu": bleu, "chrf": 50.0, "sentences_per_second": 70.4, "label": label,
        **SIGNATURES}))
    (folder / "alignment.json").write_text(json.dumps({"evaluations": {
        "attention argmax": {"aer": 0.281}, "posterior grow-diag-final-and": {"aer": 0.174}}}))
    if command:
        (folder / "commands.txt").write_text(f"2026-12-04 10:00:00  {command}\n")


def _pages(tmp_path: Path) -> tuple[Path, Path, Path]:
    results, readme, alignment = (tmp_path / "results.md", tmp_path / "README.md",
                                  tmp_path / "alignment.md")
    for page, block in ((results, None), (readme, RECIPES), (alignment, ALIGNMENT)):
        begin, end = markers(block)
        page.write_text(f"# {page.stem}\n\nprose\n\n{begin}\nold\n{end}\n\nmore prose\n")
    return results, readme, alignment


def test_a_run_here_replaces_its_own_rows_and_every_other_row_stays(tmp_path):
    ledger = [_entry("fresh", test_bleu=30.0),
              _entry("fresh (average_best5)", test_bleu=31.0, recipe="`old.yaml`, by hand"),
              _entry("fresh", machine="Intel Xeon, 2 threads, bfloat16", test_bleu=33.0),
              _entry("gone", test_bleu=20.0)]
    _run(tmp_path, "fresh", 34.5)
    merged = {(e["machine"], e["name"]): e for e in merge(ledger, collect_runs(tmp_path), tmp_path)}
    assert (AMD, "fresh (average_best5)") in merged and (AMD, "fresh") in merged
    assert merged[(AMD, "fresh (average_best5)")]["test_bleu"] == 34.5  # the run here wins
    assert merged[(AMD, "fresh (average_best5)")]["source"] == f"{tmp_path.as_posix()}/fresh"
    assert merged[(AMD, "fresh (average_best5)")]["recipe"] == "`old.yaml`, by hand"  # kept
    assert "recipe" not in merged[(AMD, "fresh")]
    assert merged[(AMD, "fresh")].get("test_bleu") is None  # no results.json here: no old figure
    assert merged[("Intel Xeon, 2 threads, bfloat16", "fresh")]["test_bleu"] == 33.0  # another machine
    assert merged[(AMD, "gone")]["test_bleu"] == 20.0  # a run not here is kept
    assert merged[(AMD, "fresh")]["alignment"] == {"attention argmax": 28.1,
                                                   "posterior grow-diag-final-and": 17.4}


def test_the_ledger_reads_back_what_it_wrote_and_names_a_bad_line(tmp_path):
    path = tmp_path / "results.jsonl"
    entries = [_entry("b", test_bleu=1.5), _entry("a", machine="Intel", split="dev", test_bleu=2.0)]
    write_ledger(path, entries)
    assert [e["name"] for e in read_ledger(path)] == ["b", "a"]  # sorted by machine (AMD, Intel)
    assert read_ledger(tmp_path / "none.jsonl") == []
    path.write_text(path.read_text() + "{not json\n")
    with pytest.raises(NMTError, match=r"results.jsonl:3: not a JSON object"):
        read_ledger(path)


def test_make_docs_writes_the_readme_block_between_its_markers_from_the_ledger(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "tatoeba", 35.3, members=2, command="python scripts/train.py configs/tatoeba.yaml")
    _run(runs, "tweaked", 30.0, command="python scripts/train.py configs/tatoeba.yaml model.dropout=0.3")
    ledger = tmp_path / "results.jsonl"
    write_ledger(ledger, [_entry("old (ensemble)", machine="Intel Xeon, 2 threads, bfloat16",
                                 test_bleu=32.81, chrf=50.49, recipe="`configs/old.yaml`")])
    results, readme, alignment = _pages(tmp_path)
    assert update_docs(ledger, collect_runs(runs), runs, results, readme, alignment) == 5
    text = readme.read_text()
    begin, end = markers(RECIPES)
    assert text.startswith(f"# README\n\nprose\n\n{begin}\n| machine (CPU, threads, dtype) |")
    assert text.endswith(f"{end}\n\nmore prose\n") and "\nold\n" not in text
    lines = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert lines == [  # the rows `make eval` gives for a config as it is, per machine
        f"| {AMD} | `configs/tatoeba.yaml` | `tatoeba (ensemble.average_best5)` | - | 100 | 30m00s | 35.30 | - | - | 50.00 | 70 |",
        "| Intel Xeon, 2 threads, bfloat16 | `configs/old.yaml` | `old (ensemble)` | - | - | - | 32.81 | - | - | 50.49 | - |"]
    aer = alignment.read_text()
    assert f"### {AMD}" in aer and "| `tatoeba` | 28.1 | - | - | 17.4 | - |" in aer
    assert "| `tweaked` |" in aer and "prose" in aer


def test_missing_markers_are_an_error_naming_the_page(tmp_path):
    results, readme, _ = _pages(tmp_path)
    readme.write_text("# README\n\nno markers here\n")
    ledger = tmp_path / "results.jsonl"
    write_ledger(ledger, [_entry("a", test_bleu=1.0)])
    with pytest.raises(NMTError, match=r"README.md: the markers <!-- begin: generated by make "
                                       r"docs: recipes --> and .* are missing"):
        update_docs(ledger, [], tmp_path / "runs", results, readme)


def test_an_empty_runs_folder_wipes_nothing(tmp_path):
    ledger = tmp_path / "results.jsonl"
    write_ledger(ledger, [_entry("kept", test_bleu=31.0, recipe="`configs/tatoeba.yaml`")])
    before = ledger.read_text()
    results, readme, alignment = _pages(tmp_path)
    (tmp_path / "empty").mkdir()
    for runs in (tmp_path / "no_runs", tmp_path / "empty"):  # missing, or there and empty
        assert update_docs(ledger, collect_runs(runs), runs, results, readme, alignment) == 1
        assert ledger.read_text() == before
        assert "| kept |" in results.read_text() and "`kept`" in readme.read_text()


def test_no_rows_at_all_is_an_error_not_an_empty_table(tmp_path):
    results, _, _ = _pages(tmp_path)
    with pytest.raises(NMTError, match="no measured rows"):
        update_docs(tmp_path / "results.jsonl", [], tmp_path / "runs", results)
    assert "\nold\n" in results.read_text()


def test_a_recipe_said_by_hand_wins_over_the_config_files_name(tmp_path):
    runs = tmp_path / "runs"
    _run(runs, "tatoeba", 35.3, members=2, command="python scripts/train.py configs/tatoeba.yaml")
    [auto] = [e for e in merge([], collect_runs(runs), runs) if e.get("recipe")]
    assert auto["recipe"] == "`configs/tatoeba.yaml`"
    by_hand = dict(auto, recipe="`configs/tatoeba.yaml`, decoded in float32")
    [kept] = [e for e in merge([by_hand], collect_runs(runs), runs) if e.get("recipe")]
    assert kept["recipe"] == "`configs/tatoeba.yaml`, decoded in float32"
