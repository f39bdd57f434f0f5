"""One table of every experiment under runs/: what it is, how long it trained, how well it does.

Per run it reads `train_summary.json` (written by training when it ends) and `results.json`
(written by evaluate); for a run still training or stopped early it falls back to the best (or
last) checkpoint's progress and config. What is missing shows as "-". AER comes from
`alignment.json` (`make align-eval`), in points; eflomal's gets a row of its own.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import yaml

log = logging.getLogger(__name__)

COLUMNS = [("name", "run"), ("attention", "attention"), ("parameters", "params"),
           ("step", "steps"), ("train_seconds", "train time"), ("dev_bleu", "dev BLEU"),
           ("test_bleu", "test BLEU"), ("chrf", "chrF"), ("aer", "AER")]


def _read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
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


def _from_checkpoint(run: Path) -> dict:
    """Facts from the best (or last) checkpoint, for a run without train_summary.json."""
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
        return {"attention": config.get("model", {}).get("attention"), "parameters": parameters,
                "step": progress.get("step"), "train_seconds": progress.get("train_seconds"),
                "dev_bleu": progress.get("best_score") if metric == "bleu" else None}
    return {}


def collect_runs(runs_dir: str | Path) -> list[dict]:
    """A row per run folder (one holding a config, checkpoints or results), sorted by name."""
    runs_dir = Path(runs_dir)
    rows = []
    for run in sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []:
        summary = _read_json(run / "train_summary.json")
        results = _read_json(run / "results.json")
        alignment = _read_json(run / "alignment.json")
        has_config = (run / "config.yaml").is_file()
        if (summary is None and results is None and alignment is None and not has_config
                and not (run / "checkpoints").is_dir()):
            continue
        row = {key: None for key, _ in COLUMNS} | {"name": run.name}
        if summary is not None:
            row.update({"attention": summary.get("attention"), "parameters": summary.get("parameters"),
                        "step": summary.get("step"), "train_seconds": summary.get("train_seconds"),
                        "dev_bleu": summary.get("best_dev_bleu")})
        else:
            row.update(_from_checkpoint(run))
        if row["attention"] is None and has_config:
            config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")) or {}
            row["attention"] = (config.get("model") or {}).get("attention")
        if results is not None:
            split = results.get("split", "test")
            bleu = results.get("bleu")
            row["test_bleu"] = bleu if split == "test" or bleu is None else f"{bleu:.2f} ({split})"
            row["chrf"] = results.get("chrf")
        if alignment is not None:  # alignment error rate on the gold links, in points like BLEU
            aer = alignment.get("aer")
            row["aer"] = 100 * aer if isinstance(aer, (int, float)) else None
            if alignment.get("aligner") == "eflomal":  # a statistical aligner's own row
                row["attention"] = row["attention"] or "eflomal"
        rows.append(row)
    return rows


def _cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key == "parameters":
        return f"{value / 1e6:.1f}M"
    if key == "train_seconds":
        minutes, seconds = divmod(round(value), 60)
        hours, minutes = divmod(minutes, 60)
        return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{seconds:02d}s"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def format_table(rows: list[dict]) -> str:
    """A plain-text table, one line per run; numbers right-aligned."""
    cells = [[title for _, title in COLUMNS]] + [[_cell(k, row.get(k)) for k, _ in COLUMNS]
                                                 for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = []
    for number, line in enumerate(cells):
        parts = [c.ljust(w) if i < 2 or number == 0 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(line, widths))]
        lines.append("  ".join(parts).rstrip())
        if number == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
