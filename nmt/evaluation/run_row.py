"""A run's own row of the report (nmt/evaluation/report.py): what it is, how long it trained and
how well it does, from the files its stages wrote (the list is in report.py's docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nmt.align.stage import evaluation_key
from nmt.config.migrate import model_in_sections
from nmt.evaluation.cleaning import clean_counts
from nmt.evaluation.report_table import COLUMNS
from nmt.evaluation.run_files import checkpoint_facts, read_json, read_yaml
from nmt.model import attention_name

# The two extractions of alignment.json's "evaluations" the report shows (nmt/align/stage.py)
ATTENTION_KEY = evaluation_key({"weights": "attention", "method": "argmax"})
POSTERIOR_KEY = evaluation_key({"weights": "posterior", "method": "grow-diag-final-and"})
# serving.<label>.json of the run's own checkpoint (results.json): bench/bench_serve.py's label
OWN_LABEL = "best"


def _describe(row: dict[str, Any], summary: dict | None, config: dict | None) -> None:
    """Architecture, attention, query order and subword units, from the summary or the config."""
    model = model_in_sections((config or {}).get("model") or {})  # an older flat one too
    data = (config or {}).get("data") or {}
    known = summary is not None or config is not None
    row["architecture"] = ((summary or {}).get("architecture") or model.get("architecture")
                           or ("rnn" if known else None))
    row["attention"] = (summary or {}).get("attention") or attention_name(model)
    if row["architecture"] == "rnn":  # the query order is a property of the RNN decoder
        row["query"] = ((model.get("rnn") or {}).get("attention_query")
                        or ("previous" if config else None))
    row["subword"] = data.get("subword") or ("none" if config else None)


def machine(summary: dict | None) -> str:
    """Where a run trained: CPU model, threads and dtype, as train_summary.json records them."""
    if not summary or not summary.get("cpu"):
        return "machine not recorded"
    device = "" if summary.get("device", "cpu") == "cpu" else f", {summary['device']}"
    threads = summary.get("threads")
    return f"{summary['cpu']}{device}, {threads} thread{'' if threads == 1 else 's'}, {summary.get('dtype')}"


def add_scores(row: dict[str, Any], results: dict) -> None:
    """The scores of results.json (or results.<label>.json) into the row, and its translations
    of the example sentences where it holds them."""
    split = results.get("split", "test")
    bleu = results.get("bleu")
    row["test_bleu"] = bleu if split == "test" or bleu is None else f"{bleu:.2f} ({split})"
    row["bleu_ci"] = results.get("bleu_ci")  # half the 95% bootstrap interval
    row["length_ratio"] = results.get("length_ratio")  # output words ÷ reference words
    row["length_buckets"] = results.get("length_buckets")  # not a column: report --lengths
    row["chrf"] = results.get("chrf")
    row["sentences_per_second"] = results.get("sentences_per_second")  # make eval's decoding speed
    if results.get("examples"):  # the example sentences and their translations (examples.py)
        row["examples"] = results["examples"]


def add_serving(row: dict[str, Any], serving: dict | None) -> None:
    """The figures of serving.<label>.json (bench/bench_serve.py --record) into the row of the
    results file with that label; nothing without one, so that other rows gain no keys."""
    if serving is None:
        return
    threads = serving.get("threads")
    row["serve_machine"] = (f"{serving.get('machine')}, {threads} thread{'' if threads == 1 else 's'}"
                            if threads is not None else serving.get("machine"))
    row["requests_per_second"] = serving.get("requests_per_second")  # answered (200) per second
    row["serve_clients"] = serving.get("clients")
    row["serve_failed"] = serving.get("failed")
    row["disk_mb"] = serving.get("disk_mb")  # the files its plan decodes with
    row["serve_mb_peak"] = serving.get("rss_mb_peak")  # the serving process's peak resident memory
    before = serving.get("rss_mb_before")  # ... of which the models and their serving added:
    row["serve_mb_models"] = (None if before is None or row["serve_mb_peak"] is None
                              else round(row["serve_mb_peak"] - before, 1))


def run_row(run: Path) -> tuple[dict, dict | None] | None:
    """The run's own row, and its config; None for a folder that is no run."""
    summary = read_json(run / "train_summary.json")
    config = read_yaml(run / "config.yaml")
    results = read_json(run / "results.json")
    labelled = sorted(run.glob("results.*.json"))
    alignment = read_json(run / "alignment.json")
    if (summary is None and results is None and config is None and not labelled
            and alignment is None and not (run / "checkpoints").is_dir()):
        return None
    row: dict[str, Any] = {key: None for key, _ in COLUMNS} | {"name": run.name, "run": run.name}
    row["machine"] = machine(summary)
    row["summary"] = summary is not None  # a training that ended and said where it ran
    if summary is not None:
        row.update({"parameters": summary.get("parameters"), "step": summary.get("step"),
                    "train_seconds": summary.get("train_seconds"),
                    "cpu_seconds": summary.get("cpu_seconds"),
                    "dev_bleu": summary.get("best_dev_bleu"), "ended_at": summary.get("ended_at"),
                    "spans": summary.get("spans")})
    else:
        facts, checkpoint_config = checkpoint_facts(run)
        row.update(facts)
        config = config or checkpoint_config
    _describe(row, summary, config)
    row.update(clean_counts(run, config))  # only where data.clean's counts are here
    if results is not None:
        add_scores(row, results)
        row["signature"] = results.get("signature")
        row["chrf_signature"] = results.get("chrf_signature")
    add_serving(row, read_json(run / f"serving.{OWN_LABEL}.json"))
    if alignment is not None:  # alignment error rate on the gold links, in points like BLEU
        row["aer"], row["aer_posterior"] = _aer_points(alignment)
        row["alignment"] = _aer_by_extraction(alignment)
        if alignment.get("aligner") == "eflomal":  # a statistical aligner's own row
            row["attention"] = row["attention"] or "eflomal"
    return row, config


def _aer_points(alignment: dict) -> tuple[float | None, float | None]:
    """(AER of the attention's argmax links, or a statistical aligner's own; AER of the
    posterior's grow-diag-final-and links), in points; None where not scored."""
    def points(entry: Any) -> float | None:
        aer = entry.get("aer") if isinstance(entry, dict) else None
        return 100 * aer if isinstance(aer, (int, float)) else None

    evaluations = alignment.get("evaluations")
    if not isinstance(evaluations, dict):  # written before every evaluation was kept
        return points(alignment), None
    if alignment.get("aligner") == "eflomal":
        return points(evaluations.get(evaluation_key(alignment))), None
    return points(evaluations.get(ATTENTION_KEY)), points(evaluations.get(POSTERIOR_KEY))


def _aer_by_extraction(alignment: dict) -> dict[str, float]:
    """Every extraction alignment.json scored ("attention argmax", ...), its AER in points."""
    evaluations = alignment.get("evaluations")
    return {key: round(100 * entry["aer"], 2) for key, entry in sorted(evaluations.items())
            if isinstance(entry, dict) and isinstance(entry.get("aer"), (int, float))
            } if isinstance(evaluations, dict) else {}
