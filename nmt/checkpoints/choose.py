"""Which checkpoint(s) a run translates with, and loading them as one model.

Read by nmt/decoding/plan.py, which every way into decoding goes through. In order:

- checkpoints named by the caller (`--checkpoint a.pt [--checkpoint b.pt]`): several decode as
  an ensemble;
- `eval.ensemble`: those checkpoints, as an ensemble;
- with `training.members` > 1, one checkpoint per translating member
  (the run manifest, nmt/checkpoints/manifest.py), each chosen as below, as an ensemble;
- `eval.average: last:N | best:N`: the average of the run's kept step checkpoints
  (nmt/checkpoints/averaging.py; nmt/decoding/plan.py writes it, once, before anything chooses);
- else the run's own `eval.checkpoint`: runs/<name>/checkpoints/best.pt (or last.pt), falling
  back to the other one.

Choosing only reads. The run's own best.pt writes results.json; anything else gets a label and
results of its own (`Chosen.label`, nmt/decoding/plan_labels.py): "ensemble", average_last5
etc., "last", a step checkpoint's name, or for files from elsewhere and eval.ensemble their name
and a hash of their contents.

`load_chosen` loads the chosen checkpoints as one model; several become an `Ensemble`
(nmt/model/ensemble.py) once `load_ensemble` has checked that they read and write the same ids
(`check_compatible`, which the rescoring models pass too) in the same target order.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.checkpoints.averaging import average_label, parse_average
from nmt.checkpoints.file import load_checkpoint, model_from_checkpoint
from nmt.checkpoints.manifest import translating_run_dirs
from nmt.config.schema import Config, differing_data_keys
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import file_sha256, short_hash
from nmt.model import TranslationModel
from nmt.model.ensemble import Ensemble
from nmt.runtime import pick_device

log = logging.getLogger(__name__)

RUN_CHECKPOINTS = ("best.pt", "last.pt")  # the run's own


@dataclass
class Chosen:
    paths: list[Path]  # one checkpoint, or an ensemble's members
    label: str | None  # names results.<label>.json; None for the run's own best.pt


def choose_checkpoints(config: Config, checkpoint: str | Path | list | None = None,
                       label: str | None = None) -> Chosen:
    """The checkpoints to score or translate with, and the label of their results file."""
    if label is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", label):
        raise NMTError(f"label {label!r}: use letters, digits, '_', '-' and '.' only; it names "
                       f"the results.<label>.json file")
    if isinstance(checkpoint, (list, tuple)):
        paths = [Path(p) for p in checkpoint]
    elif checkpoint:
        paths = [Path(checkpoint)]
    else:
        paths = configured_checkpoints(config)
        if config.eval.ensemble:
            return Chosen(paths, label or _content_label("ensemble", _existing(paths)))
        if config.eval.average or len(paths) > 1:
            return Chosen(paths, label or configured_label(config))
    if not paths:
        raise NMTError("no checkpoint given")
    _existing(paths)
    if label is None:
        label = _content_label("ensemble", paths) if len(paths) > 1 else _own_label(config, paths[0])
    return Chosen(paths, label)


def _existing(paths: list[Path]) -> list[Path]:
    for path in paths:
        if not path.is_file():
            raise NMTError(f"{path}: no such checkpoint file")
    return paths


def _own_label(config: Config, path: Path) -> str | None:
    """None for the run's own best.pt; "last" for its last.pt, a step's or an average's name for
    another file of its checkpoints/ folder, and a file from elsewhere by its name and content
    (best-3f9a1c2b), so that no other run's best.pt writes this run's results.json."""
    folder = (config.run_dir / "checkpoints").resolve()
    if path.resolve().parent == folder:
        return None if path.name == "best.pt" else path.stem
    return _content_label(path.stem, [path])


def _content_label(name: str, paths: list[Path]) -> str:
    """`name` and a short hash of the files' contents (of one file: its SHA-256's start):
    best-3f9a1c2b, ensemble-0c6e12d4."""
    shas = [file_sha256(p) for p in paths]
    return f"{name}-{shas[0][:8] if len(shas) == 1 else short_hash(shas, 8)}"


def configured_label(config: Config) -> str | None:
    """The words of the label of what eval.* chooses in the run (nmt/checkpoints/choose.py):
    the members' ensemble, each averaged as eval.average says, or the average, or the run's own
    checkpoint (None for best.pt, "last")."""
    averaged = average_label(*parse_average(config.eval.average)) if config.eval.average else None
    own = averaged or (None if config.eval.checkpoint == "best" else config.eval.checkpoint)
    if config.training.members > 1:
        return f"ensemble.{own}" if own else "ensemble"
    return own


def configured_checkpoints(config: Config) -> list[Path]:
    """The checkpoints used when none is named: eval.ensemble, else each translating member's
    (one, or an ensemble of training.members) as eval.average or eval.checkpoint say."""
    if config.eval.ensemble:
        return [Path(p) for p in config.eval.ensemble]
    return chosen_in(config, translating_run_dirs(config))


def chosen_in(config: Config, run_dirs: list[Path]) -> list[Path]:
    """Each run folder's checkpoint: the average eval.average names (written by the averaging
    step, nmt/decoding/plan.py), else eval.checkpoint."""
    if config.eval.average:
        name = average_label(*parse_average(config.eval.average))
        return [run_dir / "checkpoints" / f"{name}.pt" for run_dir in run_dirs]
    return [find_checkpoint(config, config.eval.checkpoint, run_dir) for run_dir in run_dirs]


def one_checkpoint(config: Config, checkpoint: str | Path | None = None) -> Path:
    """The one checkpoint a single model is read from (a benchmark): `checkpoint` when given, else
    the run's eval.checkpoint (best, else last); eval.ensemble and eval.average do not apply."""
    return Path(checkpoint) if checkpoint else find_checkpoint(config, config.eval.checkpoint)


def find_checkpoint(config: Config, which: str = "best", run_dir: Path | None = None) -> Path:
    """runs/<name>/checkpoints/<which>.pt (or `run_dir`'s), falling back to the other one with
    a warning."""
    folder = (run_dir or config.run_dir) / "checkpoints"
    other = "last" if which == "best" else "best"
    for name in (which, other):
        path = folder / f"{name}.pt"
        if path.is_file():
            if name != which:
                log.warning("%s not found: using %s", folder / f"{which}.pt", path)
            return path
    raise NMTError(f"no checkpoint in {folder}: train this experiment first "
                   f"(`make train CONFIG=...`) or pass --checkpoint PATH")


def split_checkpoint_arguments(values: list[str] | None) -> list[str]:
    """`--checkpoint a.pt --checkpoint b.pt` or `--checkpoint a.pt,b.pt` → [a.pt, b.pt]."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def averaged_from(paths: list[Path]) -> list | None:
    """What an averaged checkpoint was averaged from (nmt/checkpoints/averaging.py), else None."""
    if len(paths) != 1 or paths[0].name in RUN_CHECKPOINTS:
        return None
    return load_checkpoint(paths[0], glance=True).get("averaged_from")


@dataclass
class Loaded:
    """Chosen checkpoints loaded as one model, ready to translate or align with."""

    model: TranslationModel  # in eval mode, on `device`: the one model, or an Ensemble of several
    config: Config  # the first checkpoint's: it fixes segmentation and detokenization
    src_vocab: Vocab
    tgt_vocab: Vocab
    device: torch.device
    paths: list[Path]
    progress: dict  # the first checkpoint's training progress (step, epoch, ...)
    subwords: dict[str, bytes] | None  # its sentencepiece models ({lang: bytes}), with data.subword


def load_chosen(paths: Sequence[str | Path], device: str = "auto",
                architecture: str | None = None) -> Loaded:
    """Load checkpoints as one model on `device` (auto: CUDA when there is one, cpu or cuda).

    A missing, corrupt or incompatible checkpoint is an NMTError. `architecture`: the model
    family the caller's config names; a single checkpoint of the other family is an NMTError (an
    ensemble's members may be of either family)."""
    if len(paths) == 1:
        checkpoint = load_checkpoint(paths[0])
        model, config, src_vocab, tgt_vocab = model_from_checkpoint(checkpoint, str(paths[0]),
                                                                    architecture)
        checkpoints = [checkpoint]
    else:
        model, config, src_vocab, tgt_vocab, checkpoints = load_ensemble(paths)
    chosen_device = pick_device(device)
    first = checkpoints[0]
    return Loaded(model.to(chosen_device), config, src_vocab, tgt_vocab, chosen_device,
                  [Path(p) for p in paths],
                  dict(first.get("progress") or {}), first.get("subword"))


def load_ensemble(paths: Sequence[str | Path]
                  ) -> tuple[TranslationModel, Config, Vocab, Vocab, list[dict]]:
    """Load checkpoints as one model → (model, config, src_vocab, tgt_vocab, checkpoints).

    The config (segmentation, detokenization) is the first checkpoint's; one path gives that
    model itself, not a wrapper. Members need the same vocabularies and data settings."""
    if not paths:
        raise NMTError("no checkpoint given")
    models, checkpoints = [], []
    first: tuple[str | Path, Config, Vocab, Vocab] | None = None
    for path in paths:
        checkpoint = load_checkpoint(path)
        model, config, src_vocab, tgt_vocab = model_from_checkpoint(checkpoint, source=str(path))
        if first is None:
            first = (path, config, src_vocab, tgt_vocab)
        else:
            check_compatible(first, (path, config, src_vocab, tgt_vocab))
            _check_same_order(first, path, config)
        models.append(model)
        checkpoints.append(checkpoint)
    assert first is not None  # paths is not empty
    _, config, src_vocab, tgt_vocab = first
    model = models[0] if len(models) == 1 else Ensemble(models).eval()
    return model, config, src_vocab, tgt_vocab, checkpoints


def load_beside(path: str | Path, first, what: str) -> tuple[TranslationModel, Config, int | None]:
    """A rescoring model (a channel model, or one of eval.rerank) loaded beside the model
    `first` = (path, config, src_vocab, tgt_vocab) and checked against it: the same data
    settings and vocabularies, swapped for a reverse (English → Chinese) model. Returns the
    model, its config and its training step."""
    checkpoint = load_checkpoint(path)
    model, config, src_vocab, tgt_vocab = model_from_checkpoint(checkpoint, str(path))
    reverse = config.model.direction == "reverse"
    vocabularies = (tgt_vocab, src_vocab) if reverse else (src_vocab, tgt_vocab)
    check_compatible(first, (path, config, *vocabularies), what)
    return model, config, (checkpoint.get("progress") or {}).get("step")


def check_compatible(first, other, what: str = "an ensemble's members") -> None:
    """`other` reads the same source ids and writes the same target ids, from the same text, as
    `first`: each a (path, config, src_vocab, tgt_vocab); `what` names the pair in the error."""
    first_path, first_config, first_src, first_tgt = first
    path, config, src, tgt = other
    for side, ours, theirs in (("source", first_src, src), ("target", first_tgt, tgt)):
        if ours.itos != theirs.itos:
            raise NMTError(
                f"{path} and {first_path} have different {side} vocabularies ({len(theirs.itos)} "
                f"and {len(ours.itos)} tokens): {what} must be trained on the same prepared data "
                f"(the same data.* settings)")
    differ = differing_data_keys(first_config.data, config.data)
    if differ:
        raise NMTError(f"{path} and {first_path} were trained on other data settings "
                       f"({', '.join('data.' + k for k in differ)}): {what} must read the same "
                       f"data")


def _check_same_order(first, path: str | Path, config: Config) -> None:
    """Members add up next-token probabilities, so they must write in the same order."""
    first_path, first_config = first[:2]
    if first_config.model.direction != config.model.direction:
        raise NMTError(f"{path} is a model.direction = {config.model.direction} model but "
                       f"{first_path} a {first_config.model.direction} one: an ensemble's members "
                       f"translate one way (a reverse model reranks through eval.rerank)")
    ours, theirs = first_config.model.target_order, config.model.target_order
    if ours != theirs:
        raise NMTError(f"{path} writes model.target_order = {theirs} but {first_path} writes "
                       f"{ours}: an ensemble's members must write in one order (rescore with a "
                       f"right_to_left model through eval.rerank instead)")
