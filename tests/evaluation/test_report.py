"""The results table from hand-made run folders: every cell comes from a file a stage writes."""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path

import yaml

from helpers import REPO
from nmt.evaluation.report import collect_runs, format_commands, format_markdown, format_table

SIGNATURE = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
CHRF_SIGNATURE = "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0"


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".yaml":
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
    elif path.suffix == ".json":
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(data, encoding="utf-8")


def _results(bleu: float, chrf: float, **extra) -> dict:
    return {"split": "test", "bleu": bleu, "chrf": chrf, "signature": SIGNATURE,
            "chrf_signature": CHRF_SIGNATURE, "step": 5000, **extra}


def make_runs(runs: Path) -> None:
    """Two RNN runs (one with an average and an ensemble of both), a Transformer with subwords."""
    _write(runs / "bahdanau" / "config.yaml", {"model": {"attention": "additive",
                                                         "attention_query": "previous"}})
    _write(runs / "bahdanau" / "train_summary.json", {
        "attention": "additive", "parameters": 9_700_000, "step": 5744, "train_seconds": 1806.0,
        "cpu_seconds": 3500.0,
        "best_dev_bleu": 21.94})
    _write(runs / "bahdanau" / "results.json", _results(24.41, 40.15, sentences_per_second=61.7))
    _write(runs / "bahdanau" / "commands.txt",
           "2026-12-03 08:00:00  python scripts/train.py configs/tatoeba.yaml\n"
           "2026-12-03 08:31:00  python scripts/evaluate.py configs/tatoeba.yaml\n")
    _write(runs / "luong" / "config.yaml", {"model": {"attention": "additive",
                                                      "attention_query": "current"},
                                            "data": {"subword": "none"}})
    _write(runs / "luong" / "train_summary.json", {
        "architecture": "rnn", "attention": "additive", "parameters": 7_000_000, "step": 6000,
        "train_seconds": 1200.0, "cpu_seconds": 1000.0, "best_dev_bleu": 23.69})
    _write(runs / "luong" / "results.json", _results(26.08, 41.39))
    _write(runs / "luong" / "alignment.json", {"aer": 0.4123})
    _write(runs / "luong" / "results.average_last5.json", _results(
        26.5, 41.8, label="average_last5", checkpoints=["runs/luong/checkpoints/average_last5.pt"]))
    _write(runs / "luong" / "results.ensemble.json", _results(
        27.25, 42.0, label="ensemble", step=6000, checkpoints=[
            "runs/luong/checkpoints/best.pt", "runs/bahdanau/checkpoints/best.pt"]))
    _write(runs / "transformer" / "config.yaml", {"model": {"attention": "scaled_dot",
                                                            "attention_query": "previous"},
                                                  "data": {"subword": "bpe"}})
    _write(runs / "transformer" / "train_summary.json", {
        "architecture": "transformer", "attention": "scaled_dot", "parameters": 12_000_000,
        "step": 100, "train_seconds": 60.0, "best_dev_bleu": 3.5})
    (runs / "not_a_run").mkdir()


def test_rows_come_from_the_files(tmp_path):
    make_runs(tmp_path)
    rows = {row["name"]: row for row in collect_runs(tmp_path)}
    assert list(rows) == ["bahdanau", "luong", "luong (average_last5)", "luong (ensemble)",
                          "transformer"]
    bahdanau = rows["bahdanau"]
    assert (bahdanau["architecture"], bahdanau["query"], bahdanau["subword"]) == ("rnn", "previous", "none")
    assert (bahdanau["test_bleu"], bahdanau["chrf"], bahdanau["aer"]) == (24.41, 40.15, None)
    luong = rows["luong"]
    assert (luong["query"], luong["aer"], luong["dev_bleu"]) == ("current", 41.23, 23.69)  # in points
    average = rows["luong (average_last5)"]
    assert (average["test_bleu"], average["dev_bleu"], average["parameters"]) == (26.5, None, 7_000_000)
    assert average["query"] == "current" and average["train_seconds"] == 1200.0
    ensemble = rows["luong (ensemble)"]
    assert ensemble["parameters"] == 16_700_000 and ensemble["train_seconds"] == 3006.0
    assert ensemble["cpu_seconds"] == 4500.0  # both members' runs, once each
    assert ensemble["test_bleu"] == 27.25 and ensemble["step"] is None
    transformer = rows["transformer"]
    assert (transformer["architecture"], transformer["query"], transformer["subword"]) == (
        "transformer", None, "bpe")  # a query order belongs to the RNN decoder only


def test_an_ensemble_of_runs_trained_side_by_side_counts_their_minutes_once(tmp_path):
    # a and b trained at the same time (30 minutes each, one core each), c after them
    for name, ended in (("a", "2026-12-04T11:22:00Z"), ("b", "2026-12-04T11:23:00Z"),
                        ("c", "2026-12-04T12:00:00Z")):
        _write(tmp_path / name / "train_summary.json", {
            "parameters": 100, "train_seconds": 1800.0, "cpu_seconds": 1700.0, "ended_at": ended})
    for label, members in (("pair", "ab"), ("trio", "abc")):
        _write(tmp_path / "a" / f"results.{label}.json", _results(30.0, 50.0, label=label, checkpoints=[
            f"runs/{member}/checkpoints/best.pt" for member in members]))
    rows = {row["name"]: row for row in collect_runs(tmp_path)}
    assert rows["a (pair)"]["train_seconds"] == 1860.0  # 11:22 - 30 min to 11:23: 31 minutes
    assert rows["a (pair)"]["cpu_seconds"] == 3400.0  # the CPU time is every run's
    assert rows["a (trio)"]["train_seconds"] == 1860.0 + 1800.0  # c began after both ended


def test_a_run_renamed_after_its_evaluation_still_finds_its_members(tmp_path):
    """The results recorded runs/tatoeba/...; the folder is now runs/tatoeba_x: its members are
    its own folders, by the run's recorded name, not another run that kept the old name."""
    for member in ("", "member2/"):
        _write(tmp_path / "tatoeba_x" / member / "train_summary.json", {
            "parameters": 100, "train_seconds": 1800.0, "cpu_seconds": 1700.0,
            "ended_at": "2026-12-04T11:22:00Z"})
    _write(tmp_path / "tatoeba" / "train_summary.json", {"parameters": 7, "train_seconds": 5.0})
    _write(tmp_path / "tatoeba_x" / "results.ensemble.json", _results(
        30.0, 50.0, label="ensemble", name="tatoeba", checkpoints=[
            "runs/tatoeba/checkpoints/best.pt", "runs/tatoeba/member2/checkpoints/best.pt"]))
    rows = {row["name"]: row for row in collect_runs(tmp_path)}
    assert rows["tatoeba_x (ensemble)"]["parameters"] == 200
    assert rows["tatoeba_x (ensemble)"]["train_seconds"] == 1800.0


def test_a_resumed_run_counts_each_of_its_sessions(tmp_path):
    # t trained 10:00-10:30 and, resumed, 12:00-12:30, plus 10 minutes no span recorded (a copy
    # of an older run's folder); u trained 10:30-11:00 between t's sessions
    _write(tmp_path / "t" / "train_summary.json", {
        "parameters": 100, "train_seconds": 4200.0, "cpu_seconds": 4200.0,
        "ended_at": "2026-12-04T12:30:00Z",
        "spans": [["2026-12-04T10:00:00Z", "2026-12-04T10:30:00Z"],
                  ["2026-12-04T12:00:00Z", "2026-12-04T12:30:00Z"]]})
    _write(tmp_path / "u" / "train_summary.json", {
        "parameters": 100, "train_seconds": 1800.0, "cpu_seconds": 1800.0,
        "ended_at": "2026-12-04T11:00:00Z"})
    _write(tmp_path / "t" / "results.both.json", _results(30.0, 50.0, label="both", checkpoints=[
        "runs/t/checkpoints/best.pt", "runs/u/checkpoints/best.pt"]))
    rows = {row["name"]: row for row in collect_runs(tmp_path)}
    assert rows["t (both)"]["train_seconds"] == 3 * 1800.0 + 600.0  # nothing overlapped


def test_plain_and_markdown_tables(tmp_path):
    make_runs(tmp_path)
    rows = collect_runs(tmp_path)
    table = format_table(rows).splitlines()
    assert table[0].split()[:4] == ["run", "architecture", "attention", "query"]
    assert table[2].split() == ["bahdanau", "rnn", "additive", "previous", "none", "9.7M", "5744",
                                "30m06s", "58m20s", "21.94", "24.41", "-", "-", "40.15", "62", "-", "-",
                                "-"]  # no decoding settings of its own
    markdown = format_markdown(rows).splitlines()
    assert markdown[0].startswith("| run | architecture |") and markdown[1].startswith("|---|")
    assert "| luong (ensemble) | rnn | additive | current | none | 16.7M | - | 50m06s | 1h15m | - | 27.25 | - | - |" in markdown[5]
    assert markdown[-3:] == [f"BLEU: sacrebleu `{SIGNATURE}`", "",
                             f"chrF: sacrebleu `{CHRF_SIGNATURE}`"]
    assert sum(SIGNATURE in line for line in markdown) == 1  # once, below the table

    _write(tmp_path / "luong" / "results.json", _results(26.08, 41.39, signature="other"))
    markdown = format_markdown(collect_runs(tmp_path))
    assert f"BLEU of bahdanau, luong (average_last5), luong (ensemble): sacrebleu `{SIGNATURE}`" in markdown
    assert "BLEU of luong: sacrebleu `other`" in markdown


def test_commands_and_the_script(tmp_path, monkeypatch, capsys):
    make_runs(tmp_path)
    listing = format_commands(tmp_path, collect_runs(tmp_path))
    assert listing.splitlines()[:3] == [
        "bahdanau:", "  2026-12-03 08:00:00  python scripts/train.py configs/tatoeba.yaml",
        "  2026-12-03 08:31:00  python scripts/evaluate.py configs/tatoeba.yaml"]
    assert "luong:\n  (no commands.txt)" in listing and listing.count("luong:") == 1

    script = REPO / "scripts" / "report.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--runs", str(tmp_path), "--markdown", "--commands"])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "| transformer | transformer |" in out and "bahdanau:\n  2026-12-03" in out


def test_curves_pair_dev_bleu_with_minutes_from_the_events(tmp_path):
    from torch.utils.tensorboard import SummaryWriter

    from nmt.evaluation.curves import dev_curve, format_curves

    writer = SummaryWriter(str(tmp_path / "run" / "tensorboard"))
    for step, bleu in ((250, 3.5), (500, 8.25)):
        writer.add_scalar("dev/bleu", bleu, step)
        writer.add_scalar("time/minutes", step / 50, step)
        writer.add_scalar("time/cpu_minutes", step / 100, step)
    writer.add_scalar("dev/bleu", 9.0, 600)  # a run from before time/ was logged: no minutes
    writer.close()
    assert dev_curve(tmp_path / "run") == [
        {"step": 250, "minutes": 5.0, "cpu_minutes": 2.5, "bleu": 3.5},
        {"step": 500, "minutes": 10.0, "cpu_minutes": 5.0, "bleu": 8.25},
        {"step": 600, "minutes": None, "cpu_minutes": None, "bleu": 9.0}]
    table = format_curves(tmp_path, ["run", "missing"])
    assert "| 500 | 10.0 | 5.0 | 8.25 |" in table and "| 600 | - | - | 9.00 |" in table
    assert "missing" not in table


def test_results_page_gets_one_table_per_machine_between_its_markers(tmp_path):
    from nmt.evaluation.results_page import BEGIN, END, update_docs

    runs = tmp_path / "runs"
    for name, cpu, dtype in (("amd", "AMD EPYC", "float32"), ("intel", "Intel Xeon", "bfloat16"),
                             ("intel2", "Intel Xeon", "bfloat16")):
        _write(runs / name / "train_summary.json", {"attention": "additive", "step": 10,
                                                     "cpu": cpu, "threads": 2, "dtype": dtype})
        _write(runs / name / "results.json", _results(20.0, 40.0))
    _write(runs / "eflomal-char" / "alignment.json", {"aer": 0.15})  # an aligner: no machine
    _write(runs / "copied" / "results.json", _results(20.0, 40.0))  # half-copied: left out
    page = tmp_path / "results.md"
    page.write_text(f"# Results\n\nintro\n\n{BEGIN}\nstale table\n{END}\n\n## Earlier\n\nkept\n")
    assert update_docs(tmp_path / "results.jsonl", collect_runs(runs), runs, page) == 4
    text = page.read_text()
    assert text.startswith("# Results\n\nintro\n\n") and text.endswith(f"{END}\n\n## Earlier\n\nkept\n")
    assert "stale table" not in text and "| copied |" not in text
    assert "### AMD EPYC, 2 threads, float32" in text
    assert text.index("### Intel Xeon") < text.index("### machine not recorded")  # unrecorded last
    intel = text.split("### Intel Xeon, 2 threads, bfloat16")[1].split("###")[0]
    assert "| intel |" in intel and "| intel2 |" in intel and "| amd |" not in intel
    assert "| eflomal-char |" in text.split("### machine not recorded")[1]


def test_interval_length_ratio_and_buckets_are_shown(tmp_path, monkeypatch, capsys):
    make_runs(tmp_path)
    buckets = [{"bucket": "1-6", "sentences": 3, "bleu": 40.0, "hyp_len": 9, "ref_len": 9,
                "ratio": 1.0},
               {"bucket": "16+", "sentences": 2, "bleu": 20.0, "hyp_len": 16, "ref_len": 20,
                "ratio": 0.8}]
    _write(tmp_path / "bahdanau" / "results.json",
           _results(24.41, 40.15, bleu_ci=1.83, length_ratio=0.9345, length_buckets=buckets))
    row = next(row for row in collect_runs(tmp_path) if row["run"] == "bahdanau")
    assert (row["bleu_ci"], row["length_ratio"]) == (1.83, 0.9345)
    line = next(line for line in format_table(collect_runs(tmp_path)).splitlines()
                if line.startswith("bahdanau "))
    assert "24.41" in line and "1.83" in line and "0.934" in line
    script = REPO / "scripts" / "report.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--runs", str(tmp_path)])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "bahdanau: 1-6: BLEU 40.0, ratio 1.000 (3) | 16+: BLEU 20.0, ratio 0.800 (2)" in out
