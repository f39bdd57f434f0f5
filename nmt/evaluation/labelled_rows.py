"""The report's rows beside a run's own (nmt/evaluation/report.py): one per results.<label>.json,
for an average of checkpoints, an ensemble or another checkpoint, with the serving figures of
serving.<label>.json where bench/bench_serve.py --record wrote one. An ensemble's row counts the
parameters of all its members and the training time of all the runs they come from (looked up by
run name under the same runs/ folder): their CPU time summed, and their wall-clock time as the
span they cover together, so that runs trained side by side count their minutes once
(train_summary.json's ended_at; runs written before it had that key count as trained one after
another)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nmt.evaluation.report_table import COLUMNS
from nmt.evaluation.run_files import read_json, split_label
from nmt.evaluation.run_row import add_scores, add_serving


def labelled_rows(run: Path, own: dict, by_name: dict[str, dict]) -> list[dict]:
    """A row per results.<label>.json: an average, an ensemble, another checkpoint."""
    rows = []
    for path in sorted(run.glob("results.*.json")):
        results = read_json(path)
        if results is None:
            continue
        named = path.name[len("results."):-len(".json")]  # serving.<named>.json: its serving
        label, split = results.get("label"), results.get("split", "test")
        if label and not label.endswith(f".{split}"):  # a dev score: beside its test row
            label = split_label(label, split)
        label = label or named  # results.dev.json: "dev"
        row = {key: own.get(key) for key, _ in COLUMNS
               if key not in ("dev_bleu", "aer", "aer_posterior")}
        row |= {"name": f"{own['name']} ({label})", "run": own["name"], "machine": own.get("machine"),
                "dev_bleu": None, "aer": None,
                "aer_posterior": None,
                "step": results.get("step", own.get("step")),
                "settings": decoding_settings(results),
                "signature": results.get("signature"),
                "chrf_signature": results.get("chrf_signature")}
        members = results.get("checkpoints") or []
        if len(members) > 1:  # an ensemble: every member's size, every member run's training
            _add_ensemble_training(row, [by_name.get(member_name(run, results.get("name"), Path(m)))
                                         for m in members])
        add_scores(row, results)
        add_serving(row, read_json(run / f"serving.{named}.json"))
        rows.append(row)
    return rows


def decoding_settings(results: dict) -> str | None:
    """What a results file decoded with beyond the run's own settings, as overrides."""
    decoding = results.get("decoding") or {}
    return " ".join(f"{key}={value}" for key, value in decoding.items()) or None


def _add_ensemble_training(row: dict[str, Any], member_runs: list[dict | None]) -> None:
    """An ensemble's parameters (all its members') and training time (its member runs', each
    run once); unknown ("-") when a member's run is not in the table or did not record it."""
    row["parameters"] = (sum(r["parameters"] for r in member_runs if r)
                         if all(r and r.get("parameters") for r in member_runs) else None)
    distinct = list({r["run"]: r for r in member_runs if r}.values())
    for key in ("train_seconds", "cpu_seconds"):
        row[key] = (sum(r[key] for r in distinct)
                    if all(r and r.get(key) is not None for r in member_runs) else None)
    if row["train_seconds"] is not None:
        row["train_seconds"] = _wall_clock_span(distinct) or row["train_seconds"]
    row["step"] = None


def _wall_clock_span(runs: list[dict]) -> float | None:
    """Seconds of wall clock that the runs' trainings cover together: the union of their
    sessions' [start, end] spans (a run without them: [ended_at - train_seconds, ended_at]);
    training seconds no recorded span holds count as trained alone. None when a run did not
    record ended_at."""
    intervals, alone = [], 0.0
    for run in runs:
        try:
            spans = [[_timestamp(start), _timestamp(end)] for start, end in run.get("spans") or []]
            if not spans:
                ended = _timestamp(run["ended_at"])
                spans = [[ended - run["train_seconds"], ended]]
        except (KeyError, TypeError, ValueError):
            return None
        intervals += spans
        alone += max(0.0, run["train_seconds"] - sum(end - start for start, end in spans))
    covered, reached = 0.0, float("-inf")
    for start, end in sorted(intervals):
        covered += max(0.0, end - max(start, reached))
        reached = max(reached, end)
    return covered + alone


def _timestamp(utc: str) -> float:
    return datetime.strptime(utc, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def run_name(run: Path) -> str:
    """A run's name in the table: its folder's, "<run>/member<k>" for a member trained beside it
    (training.members, nmt/training/members.py)."""
    return f"{run.parent.name}/{run.name}" if run.name.startswith("member") else run.name


def member_name(run: Path, recorded: str | None, checkpoint: Path) -> str:
    """The table name of the run a member's checkpoint came from. A member of this run (its
    recorded name, results' "name") is named by the folder the run is in now, so a run moved or
    renamed after its evaluation still finds its members' rows."""
    name = run_name(checkpoint.parent.parent)
    top, _, member = name.partition("/")
    if recorded is not None and top == recorded:
        return f"{run.name}/{member}" if member else run.name
    return name
