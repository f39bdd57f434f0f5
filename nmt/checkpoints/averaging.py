"""Checkpoint averaging: one model whose weights are the mean of the last or best N checkpoints.

Checkpoints saved a few hundred steps apart near the end of training lie around the same optimum;
the mean of their weights usually scores higher than any one of them, at no cost at test time
(Vaswani et al., 2017; fairseq's scripts/average_checkpoints.py, Marian's and OpenNMT's
equivalents). It needs `training.keep_checkpoints: N`, which keeps checkpoints/step_NNNNNN.pt.

- last N: the N newest step checkpoints;
- best N: the N with the highest dev score (dev BLEU, or minus the dev loss with
  `training.early_stopping_metric: loss`) among those validated at the step they were saved.

A run with fewer than N (a short run) is an error for scripts/average_checkpoints.py, which asks
for N by name; `eval.average` (`make eval`) averages the ones there are, with a warning.
Resolving a decoding plan only reads (`planned_average`: is the average written, from these
sources' contents?); the averaging step (`write_planned`, nmt/decoding/materialize.py) writes.

Each checkpoint contributes its translation weights (the moving average where training kept
one, see `inference_weights`). Floating-point tensors are summed in float64 and divided by N, so
the result is the float32 nearest to the exact mean; any other tensor must be equal in all of
them. The output is an ordinary checkpoint (config, vocabularies, progress of the newest one)
that translate and evaluate load like best.pt, with "averaged_from" naming its sources.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nmt.checkpoints.file import (inference_weights, load_checkpoint, make_checkpoint, save_checkpoint,
                                  step_checkpoints)
from nmt.config.migrate import model_in_sections
from nmt.errors import NMTError
from nmt.io import file_sha256

log = logging.getLogger(__name__)


def parse_average(spec: str) -> tuple[str, int]:
    """"last:5" → ("last", 5); the config schema has already checked the form."""
    how, _, count = spec.partition(":")
    return how, int(count)


def select_checkpoints(folder: str | Path, how: str, count: int, *, allow_fewer: bool = False
                       ) -> list[Path]:
    """The last or best `count` step checkpoints of a run's checkpoints/ folder, oldest first.

    Fewer than `count` is an NMTError, or with `allow_fewer` a warning and all there are (none
    is an error still)."""
    folder = Path(folder)
    if how not in ("last", "best"):
        raise NMTError(f"checkpoint averaging: choose 'last' or 'best', not {how!r}")
    kept = step_checkpoints(folder)
    if how == "last":
        candidates = kept[::-1]  # newest first
        shortage = (f"{len(kept)} step checkpoints kept, {count} asked for; train with "
                    f"training.keep_checkpoints={count} (or more) to keep them, or average fewer")
    else:
        candidates = _best_first(kept)
        shortage = (f"{len(candidates)} kept checkpoints have a dev score, {count} asked for; a "
                    f"step checkpoint has one when a validation ran at its step (make "
                    f"training.checkpoint_every divide training.validate_every), or use "
                    f"last:{count}")
    if len(candidates) < count:
        if not (allow_fewer and candidates):
            raise NMTError(f"{folder}: {shortage}")
        log.warning("%s: %s; averaging the %d there are", folder, shortage, len(candidates))
    return [path for _, path in sorted(candidates[:count])]


def _best_first(kept: list[tuple[int, Path]]) -> list[tuple[int, Path]]:
    """The kept (step, path) that have a dev score, the best first; of equal ones the newer."""
    scored = []
    for step, path in kept:
        score = load_checkpoint(path, glance=True).get("dev_score")
        if score is not None:
            scored.append((float(score), step, path))
    scored.sort(key=lambda entry: (-entry[0], -entry[1]))
    return [(step, path) for _, step, path in scored]


def average_weights(weights: list[dict[str, torch.Tensor]], names: list[str]
                    ) -> dict[str, torch.Tensor]:
    """The element-wise mean of state dicts that have the same keys and shapes."""
    first = weights[0]
    for name, other in zip(names[1:], weights[1:]):
        if other.keys() != first.keys():
            differ = sorted(other.keys() ^ first.keys())
            raise NMTError(f"{name}: its weights differ from {names[0]}'s in {differ[:5]}; "
                           f"only checkpoints of one model can be averaged")
    averaged = {}
    for key, tensor in first.items():
        tensors = [w[key] for w in weights]
        if any(t.shape != tensor.shape for t in tensors):
            raise NMTError(f"{key}: shapes {[tuple(t.shape) for t in tensors]} differ in "
                           f"{names}; only checkpoints of one model can be averaged")
        if tensor.is_floating_point():
            total = torch.stack([t.double() for t in tensors]).sum(dim=0)
            averaged[key] = (total / len(tensors)).to(tensor.dtype)
        elif all(torch.equal(t, tensor) for t in tensors):
            averaged[key] = tensor.clone()
        else:
            raise NMTError(f"{key}: a non-float tensor that differs between {names}")
    return averaged


def average_checkpoints(paths: Sequence[str | Path]) -> dict[str, Any]:
    """A checkpoint whose weights are the mean of `paths`' translation weights. Its
    "averaged_from" names each source by file name and content (SHA-256), never by how its path
    was spelled, so the same sources give the same bytes however the run folder was reached."""
    if not paths:
        raise NMTError("checkpoint averaging needs at least one checkpoint")
    names = [str(p) for p in paths]
    checkpoints = [load_checkpoint(p) for p in paths]
    newest = max(checkpoints, key=lambda c: (c.get("progress") or {}).get("step", 0))
    for name, checkpoint in zip(names, checkpoints):
        for key in ("src_vocab", "tgt_vocab"):
            if checkpoint[key] != newest[key]:
                raise NMTError(f"{name}: its {key} differs from the others'; only checkpoints "
                               f"of one run (or runs on the same vocabularies) can be averaged")
        ours, theirs = checkpoint["config"]["model"], newest["config"]["model"]
        if model_in_sections(ours) != model_in_sections(theirs):  # a flat one: an older version's
            raise NMTError(f"{name}: its model section differs from the others'")
    model = average_weights([inference_weights(c) for c in checkpoints], names)
    steps = [(c.get("progress") or {}).get("step") for c in checkpoints]
    return make_checkpoint(
        newest["config"], newest["src_vocab"], newest["tgt_vocab"], model,
        progress=dict(newest.get("progress") or {}),
        subword=newest.get("subword"),  # the sentencepiece models travel with the weights
        averaged_from=[{"checkpoint": Path(path).name, "sha256": file_sha256(path), "step": step,
                        "dev_score": c.get("dev_score")}
                       for path, step, c in zip(paths, steps, checkpoints)])


def average_label(how: str, count: int) -> str:
    """The name of an average's checkpoint and results files: average_last5."""
    return f"average_{how}{count}"


def write_average(run_dir: Path, how: str, count: int, output: str | Path | None = None, *,
                  allow_fewer: bool = False) -> Path:
    """Average the last/best `count` step checkpoints of `run_dir`; returns the file written
    (default run_dir/checkpoints/average_last5.pt, named for what was asked even when
    `allow_fewer` averages fewer: its "averaged_from" says which)."""
    folder = Path(run_dir) / "checkpoints"
    paths = select_checkpoints(folder, how, count, allow_fewer=allow_fewer)
    output = Path(output) if output else folder / f"{average_label(how, count)}.pt"
    save_checkpoint(output, average_checkpoints(paths))
    return output


@dataclass(frozen=True)
class PlannedAverage:
    """The average eval.average asks of one run folder: where it is, what it must be averaged
    from (by content), and whether the file there already is that average."""

    output: Path  # run_dir/checkpoints/average_best5.pt
    sources: tuple[Path, ...]  # the kept step checkpoints it averages, oldest first
    source_sha256: tuple[str, ...]
    written: bool  # output holds the average of exactly these sources' contents


def planned_average(run_dir: Path, how: str, count: int) -> PlannedAverage:
    """Only reads: the average eval.average asks for (of fewer, with a warning, when a short run
    kept fewer) and whether it is written. An average is known by the SHA-256 of the checkpoints
    it averages, so reaching the run by another spelling of its path finds the same one."""
    folder = Path(run_dir) / "checkpoints"
    output = folder / f"{average_label(how, count)}.pt"
    sources = select_checkpoints(folder, how, count, allow_fewer=True)
    shas = tuple(file_sha256(path) for path in sources)
    written = False
    if output.is_file():
        entries = load_checkpoint(output, glance=True).get("averaged_from") or []
        written = tuple(entry.get("sha256") for entry in entries) == shas
    return PlannedAverage(output, tuple(sources), shas, written)


def write_planned(average: PlannedAverage) -> Path:
    """The averaging step: writes `average` unless it is written already."""
    if not average.written:
        save_checkpoint(average.output, average_checkpoints(list(average.sources)))
        log.info("averaged %d checkpoints into %s", len(average.sources), average.output)
    return average.output
