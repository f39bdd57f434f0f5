"""The report's columns, and the table printed from its rows: plain text for the console,
Markdown for docs/results.md, and each run's commands below it (nmt/evaluation/report.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

COLUMNS = [("name", "run"), ("architecture", "architecture"), ("attention", "attention"),
           ("query", "query order"), ("subword", "subword"), ("parameters", "params"),
           ("step", "steps"), ("train_seconds", "train time"), ("cpu_seconds", "CPU time"),
           ("dev_bleu", "dev BLEU"),
           ("test_bleu", "test BLEU"), ("bleu_ci", "± 95%"), ("length_ratio", "len. ratio"),
           ("chrf", "chrF"), ("sentences_per_second", "sent/s"), ("aer", "AER"),
           ("aer_posterior", "AER post."), ("settings", "decoding settings")]
# columns of words, left-aligned (the others are numbers): the first five, and the settings that
# tell two decodings of one run apart (a results file's "decoding")
TEXT_COLUMNS = 5
TEXT_KEYS = {key for key, _ in COLUMNS[:TEXT_COLUMNS]} | {"settings"}


def format_cell(key: str, value: Any) -> str:
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
        parts = [c.ljust(w) if COLUMNS[i][0] in TEXT_KEYS or number == 0 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(line, widths))]
        lines.append("  ".join(parts).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_markdown(rows: list[dict]) -> str:
    """A Markdown table (docs/results.md), with the sacrebleu signatures once below it."""
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |",
             "|" + "|".join("---" if key in TEXT_KEYS else "---:" for key, _ in COLUMNS) + "|"]
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
