"""One table of every experiment under runs/: what it is, how long it trained, how well it does.

Every figure comes from a file a stage wrote, never from a hand-kept list:
- `train_summary.json` (training, when it ends): architecture, parameters, steps, training time,
  best dev BLEU; for a run still training or stopped early, the best (or last) checkpoint's
  progress and config instead;
- `config.yaml` (training, at the start): attention, the attention query order, subword units;
- `results.json` (evaluate, on the run's own best/last checkpoint): test BLEU with its 95%
  bootstrap interval, the length ratio (and per source-length bucket) and chrF, with the
  sacrebleu signature; `results.<label>.json` (evaluate, on an average of checkpoints, an
  ensemble or another checkpoint) each give a row of their own, "run (label)";
- `alignment.json` (alignment evaluation, if any): the AER of the attention's argmax links (a
  statistical aligner: its own symmetrized links) and of the posterior's grow-diag-final-and
  links, where those were scored;
- `commands.txt` (train, evaluate and average_checkpoints append to it): how each was made.

What is missing shows as "-". An ensemble's row counts the parameters of all its members and the
training time of all the runs they come from (looked up by run name under the same runs/ folder):
their CPU time summed, and their wall-clock time as the span they cover together, so that runs
trained side by side count their minutes once (train_summary.json's ended_at; runs written before
it had that key count as trained one after another).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path

import yaml

from nmt.align.stage import evaluation_key
from nmt.config.migrate import model_in_sections
from nmt.model import attention_name

log = logging.getLogger(__name__)

COLUMNS = [("name", "run"), ("architecture", "architecture"), ("attention", "attention"),
           ("query", "query order"), ("subword", "subword"), ("parameters", "params"),
           ("step", "steps"), ("train_seconds", "train time"), ("cpu_seconds", "CPU time"),
           ("dev_bleu", "dev BLEU"),
           ("test_bleu", "test BLEU"), ("bleu_ci", "± 95%"), ("length_ratio", "len. ratio"),
           ("chrf", "chrF"), ("sentences_per_second", "sent/s"), ("aer", "AER"),
           ("aer_posterior", "AER post.")]
# The two extractions of alignment.json's "evaluations" the report shows (nmt/align/stage.py)
ATTENTION_KEY = evaluation_key({"weights": "attention", "method": "argmax"})
POSTERIOR_KEY = evaluation_key({"weights": "posterior", "method": "grow-diag-final-and"})
TEXT_COLUMNS = 5  # the first five are words: left-aligned


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        log.warning("%s: unreadable (%s), ignored", path, error)
        return None
    return data if isinstance(data, dict) else None


def _read_yaml(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        log.warning("%s: unreadable (%s), ignored", path, error)
        return None
    return data if isinstance(data, dict) else None


def _count_parameters(state_dict: dict) -> int:
    """Numbers in the weights; tied weights (one tensor under two names) count once."""
    seen, total = set(), 0
    for tensor in state_dict.values():
        if tensor.data_ptr() not in seen:
            seen.add(tensor.data_ptr())
            total += tensor.numel()
    return total


def _from_checkpoint(run: Path) -> tuple[dict, dict | None]:
    """Facts and the config from the best (or last) checkpoint, for a run without
    train_summary.json."""
    import torch

    for name in ("best.pt", "last.pt"):
        path = run / "checkpoints" / name
        if not path.is_file():
            continue
        try:
            checkpoint = torch.load(path, map_location="cpu", weights_only=True)
            config, progress = checkpoint["config"], checkpoint.get("progress") or {}
            parameters = _count_parameters(checkpoint["model"])
        except Exception as error:  # noqa: BLE001 (torch.load raises many kinds; show the other runs)
            log.warning("%s: unreadable checkpoint (%s), ignored", path, error)
            continue
        metric = config.get("training", {}).get("early_stopping_metric", "bleu")
        return {"parameters": parameters, "step": progress.get("step"),
                "train_seconds": progress.get("train_seconds"),
                "cpu_seconds": progress.get("cpu_seconds"),
                "dev_bleu": progress.get("best_score") if metric == "bleu" else None}, config
    return {}, None


def _describe(row: dict, summary: dict | None, config: dict | None) -> None:
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


def _scores(row: dict, results: dict) -> None:
    split = results.get("split", "test")
    bleu = results.get("bleu")
    row["test_bleu"] = bleu if split == "test" or bleu is None else f"{bleu:.2f} ({split})"
    row["bleu_ci"] = results.get("bleu_ci")  # half the 95% bootstrap interval
    row["length_ratio"] = results.get("length_ratio")  # output words ÷ reference words
    row["length_buckets"] = results.get("length_buckets")  # not a column: report --lengths
    row["chrf"] = results.get("chrf")
    row["sentences_per_second"] = results.get("sentences_per_second")  # make eval's decoding speed


def _run_row(run: Path) -> tuple[dict, dict | None] | None:
    """The run's own row, and its config; None for a folder that is no run."""
    summary = _read_json(run / "train_summary.json")
    config = _read_yaml(run / "config.yaml")
    results = _read_json(run / "results.json")
    labelled = sorted(run.glob("results.*.json"))
    alignment = _read_json(run / "alignment.json")
    if (summary is None and results is None and config is None and not labelled
            and alignment is None and not (run / "checkpoints").is_dir()):
        return None
    row = {key: None for key, _ in COLUMNS} | {"name": run.name, "run": run.name}
    row["machine"] = machine(summary)
    row["summary"] = summary is not None  # a training that ended and said where it ran
    if summary is not None:
        row.update({"parameters": summary.get("parameters"), "step": summary.get("step"),
                    "train_seconds": summary.get("train_seconds"),
                    "cpu_seconds": summary.get("cpu_seconds"),
                    "dev_bleu": summary.get("best_dev_bleu"), "ended_at": summary.get("ended_at"),
                    "spans": summary.get("spans")})
    else:
        facts, checkpoint_config = _from_checkpoint(run)
        row.update(facts)
        config = config or checkpoint_config
    _describe(row, summary, config)
    if results is not None:
        _scores(row, results)
        row["signature"] = results.get("signature")
        row["chrf_signature"] = results.get("chrf_signature")
    if alignment is not None:  # alignment error rate on the gold links, in points like BLEU
        row["aer"], row["aer_posterior"] = _aer_points(alignment)
        row["alignment"] = _aer_by_extraction(alignment)
        if alignment.get("aligner") == "eflomal":  # a statistical aligner's own row
            row["attention"] = row["attention"] or "eflomal"
    return row, config


def _aer_points(alignment: dict) -> tuple[float | None, float | None]:
    """(AER of the attention's argmax links, or a statistical aligner's own; AER of the
    posterior's grow-diag-final-and links), in points; None where not scored."""
    def points(entry) -> float | None:
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


def _labelled_rows(run: Path, own: dict, by_name: dict[str, dict]) -> list[dict]:
    """A row per results.<label>.json: an average, an ensemble, another checkpoint."""
    rows = []
    for path in sorted(run.glob("results.*.json")):
        results = _read_json(path)
        if results is None:
            continue
        label = results.get("label") or path.name[len("results."):-len(".json")]
        row = {key: own.get(key) for key, _ in COLUMNS
               if key not in ("dev_bleu", "aer", "aer_posterior")}
        row |= {"name": f"{own['name']} ({label})", "run": own["name"], "machine": own.get("machine"),
                "dev_bleu": None, "aer": None,
                "aer_posterior": None,
                "step": results.get("step", own.get("step")),
                "signature": results.get("signature"),
                "chrf_signature": results.get("chrf_signature")}
        members = results.get("checkpoints") or []
        if len(members) > 1:  # an ensemble: every member's size, every member run's training
            member_runs = [by_name.get(_run_name(Path(m).parent.parent)) for m in members]
            row["parameters"] = (sum(r["parameters"] for r in member_runs)
                                 if all(r and r.get("parameters") for r in member_runs) else None)
            distinct = list({r["run"]: r for r in member_runs if r}.values())
            for key in ("train_seconds", "cpu_seconds"):
                row[key] = (sum(r[key] for r in distinct)
                            if all(r and r.get(key) is not None for r in member_runs) else None)
            if row["train_seconds"] is not None:
                row["train_seconds"] = _wall_clock_span(distinct) or row["train_seconds"]
            row["step"] = None
        _scores(row, results)
        rows.append(row)
    return rows


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


def _run_name(run: Path) -> str:
    """A run's name in the table: its folder's, "<run>/member<k>" for a member trained beside it
    (training.members, nmt/training/members.py)."""
    return f"{run.parent.name}/{run.name}" if run.name.startswith("member") else run.name


def collect_runs(runs_dir: str | Path) -> list[dict]:
    """A row per run folder (one holding a config, checkpoints or results) and per member folder
    inside one, sorted by name, each followed by the rows of its labelled results."""
    runs_dir = Path(runs_dir)
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    folders = [folder for run in folders
               for folder in (run, *sorted(run.glob("member[0-9]*")))]
    own = {}
    for run in folders:
        found = _run_row(run)
        if found is not None:
            own[_run_name(run)] = found[0] | {"name": _run_name(run), "run": _run_name(run),
                                               "folder": run}
    rows = []
    for row in own.values():
        rows.append(row)
        rows.extend(_labelled_rows(row["folder"], row, own))
    return rows


def format_cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key == "parameters":
        return f"{value / 1e6:.1f}M"
    if key in ("train_seconds", "cpu_seconds"):
        minutes, seconds = divmod(round(value), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
    if key == "length_ratio":
        return f"{value:.3f}"
    if key == "sentences_per_second":
        return f"{value:.0f}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def format_table(rows: list[dict]) -> str:
    """A plain-text table, one line per row; numbers right-aligned."""
    cells = [[title for _, title in COLUMNS]] + [[format_cell(k, row.get(k)) for k, _ in COLUMNS]
                                                 for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = []
    for number, line in enumerate(cells):
        parts = [c.ljust(w) if i < TEXT_COLUMNS or number == 0 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(line, widths))]
        lines.append("  ".join(parts).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_markdown(rows: list[dict]) -> str:
    """A Markdown table (docs/results.md), with the sacrebleu signatures once below it."""
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
             "|" + "|".join("---" if i < TEXT_COLUMNS else "---:" for i in range(len(COLUMNS))) + "|"]
    for row in rows:
        lines.append("| " + " | ".join(format_cell(k, row.get(k)).replace("|", "\\|")
                                       for k, _ in COLUMNS) + " |")
    for key, metric in (("signature", "BLEU"), ("chrf_signature", "chrF")):
        signatures: dict[str, list[str]] = {}
        for row in rows:
            if row.get(key):
                signatures.setdefault(row[key], []).append(row["name"])
        if len(signatures) == 1:
            lines += ["", f"{metric}: sacrebleu `{next(iter(signatures))}`"]
        for signature, names in signatures.items() if len(signatures) > 1 else ():
            lines += ["", f"{metric} of {', '.join(names)}: sacrebleu `{signature}`"]
    return "\n".join(lines)


def format_commands(runs_dir: str | Path, rows: list[dict]) -> str:
    """Each run's commands.txt: the commands that made its checkpoints and results."""
    parts = []
    for run in dict.fromkeys(row["run"] for row in rows):
        path = Path(runs_dir) / run / "commands.txt"
        text = path.read_text(encoding="utf-8").rstrip() if path.is_file() else "(no commands.txt)"
        parts.append(f"{run}:\n" + "\n".join(f"  {line}" for line in text.splitlines()))
    return "\n".join(parts)
