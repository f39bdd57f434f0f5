"""Reading what a run's stages wrote, for the report: a file that is missing or unreadable is
None (with a warning), so that one broken run never hides the others."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import yaml

log = logging.getLogger(__name__)


def split_label(label: str | None, split: str) -> str | None:
    """The label of a results file: a dev score's ends in ".dev", so that it never replaces the
    test score of the same decoding (results.<label>.json)."""
    return label if split == "test" else ".".join(part for part in (label, split) if part)


def read_json(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        log.warning("%s: unreadable (%s), ignored", path, error)
        return None
    return data if isinstance(data, dict) else None


def read_yaml(path: Path) -> dict | None:
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


def checkpoint_facts(run: Path) -> tuple[dict, dict | None]:
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
