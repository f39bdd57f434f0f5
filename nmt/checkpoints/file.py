"""Checkpoints: one `.pt` file holds everything needed to resume training or to translate.

A checkpoint holds only tensors, numbers, strings, lists and dicts, so it loads with
`torch.load(weights_only=True)`: opening a checkpoint file can never run code. The vocabularies
and the resolved config travel inside it, so translating needs no prepared data. Its contents are
spelled once, in `make_checkpoint` (what training adds for a resume: `TrainingState`):

    {"format": 1, "config": {...}, "src_vocab": [tokens], "tgt_vocab": [tokens],
     "model": state_dict, "optimizer": state_dict | None, "scheduler": state_dict | None,
     "progress": {"step", "epoch", "batch_in_epoch", ...}, "rng": [per rank {...}],
     "averaged_model": state_dict | None, "averaged_updates": int,
     "subword": {"zh": bytes, "en": bytes} | None,  # sentencepiece models, with data.subword
     ...}  # extras: "dev_score" (step checkpoints), "averaged_from" (averages)

With `training.ema_decay`, "model" holds the weights training goes on from and "averaged_model"
their moving average, the weights validation scored and translation uses.

With `training.keep_checkpoints: N`, every save of last.pt also writes checkpoints/step_NNNNNN.pt:
the same without what only resuming needs (optimizer, scheduler, generators: `weights_only`),
plus "dev_score", the score of the validation at that step (None when none ran there), so that
nmt/checkpoints/averaging.py can pick the last or the best N. Only the newest N are kept.
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from nmt.config.loader import build_saved_config
from nmt.config.schema import Config
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write
from nmt.model import TranslationModel, build_model

FORMAT = 1
STEP_PATTERN = "step_*.pt"
# What only resuming training needs; a weights-only checkpoint (step, averaged) has these empty.
RESUME_ONLY: dict[str, Any] = {"optimizer": None, "scheduler": None, "rng": []}


@dataclass(frozen=True)
class TrainingState:
    """What a checkpoint holds besides the weights, the vocabularies and the progress: the
    optimizer, scheduler and generators only resuming needs, and the moving average of the
    weights (training.ema_decay). Left empty, the checkpoint is weights-only."""

    optimizer: dict | None = None
    scheduler: dict | None = None
    rng: list | None = None  # per rank, rng_state()
    averaged_model: dict | None = None
    averaged_updates: int = 0


def make_checkpoint(config: dict, src_vocab: list[str], tgt_vocab: list[str], model: dict,
                    progress: dict, subword: dict | None = None,
                    training: TrainingState | None = None, **extra: Any) -> dict[str, Any]:
    """The one spelling of a checkpoint's contents (see the module docstring); `extra` adds
    keys such as "dev_score" or "averaged_from". Without `training` it is a weights-only
    checkpoint: it translates and is averaged, it does not resume."""
    state = TrainingState() if training is None else training
    return {"config": config, "src_vocab": src_vocab, "tgt_vocab": tgt_vocab, "model": model,
            "optimizer": state.optimizer, "scheduler": state.scheduler, "progress": progress,
            "rng": [] if state.rng is None else state.rng, "averaged_model": state.averaged_model,
            "averaged_updates": state.averaged_updates, "subword": subword, **extra}


def weights_only(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """`checkpoint` without what only resuming needs."""
    return {**checkpoint, **RESUME_ONLY}


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write to a temporary file, then rename: a kill mid-write leaves the old file intact.

    Serialized in memory first: torch.save writing to a file turns a full disk into "RuntimeError:
    [enforce fail at inline_container.cc] unexpected pos", losing the reason; a plain write keeps
    it, and atomic_write makes it an NMTError naming the path.
    """
    buffer = io.BytesIO()
    torch.save({"format": FORMAT, **state}, buffer)
    def write(tmp: Path) -> None:
        tmp.write_bytes(buffer.getbuffer())

    atomic_write(path, write)


def step_checkpoint_name(step: int) -> str:
    return f"step_{step:06d}.pt"


def step_checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """The kept step checkpoints of a run's checkpoints/ folder as (step, path), oldest first."""
    found = []
    for path in Path(folder).glob(STEP_PATTERN):
        digits = path.stem.removeprefix("step_")
        if digits.isdigit():
            found.append((int(digits), path))
    return sorted(found)


def keep_step_checkpoint(folder: Path, state: dict[str, Any], keep: int,
                         dev_score: float | None) -> Path:
    """Write the weights of `state` as step_NNNNNN.pt, then delete all but the newest `keep`.

    Each file is written atomically and deleted only after the newer one is complete, so a kill
    at any moment leaves whole files."""
    path = Path(folder) / step_checkpoint_name(state["progress"]["step"])
    save_checkpoint(path, {**weights_only(state), "dev_score": dev_score})
    for _, old in step_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: str | Path, glance: bool = False) -> dict[str, Any]:
    """Read a checkpoint safely; a missing, corrupt or foreign file is a clear NMTError.
    `glance`: for its small entries (config, progress, dev score): the tensors are memory-mapped,
    read from disk only if used."""
    path = Path(path)
    if not path.is_file():
        raise NMTError(f"{path}: checkpoint not found; train first (`make train`) or pass --checkpoint")
    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True, mmap=glance)
    except Exception as error:  # torch raises many kinds for a bad file
        raise NMTError(f"{path}: not a readable checkpoint ({type(error).__name__}: {error})") from None
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != FORMAT:
        raise NMTError(f"{path}: not a checkpoint of this project (format {FORMAT} expected)")
    return checkpoint


def model_from_checkpoint(checkpoint: dict[str, Any], source: str = "checkpoint",
                          architecture: str | None = None
                          ) -> tuple[TranslationModel, Config, Vocab, Vocab]:
    """Rebuild the trained model, its config and vocabularies; the model is in eval mode.

    `architecture`: the model family the caller's config names; a checkpoint of the other
    family is an NMTError naming both (the checkpoint's own config builds the model). A
    checkpoint that lacks a part or holds the wrong kind of thing is an NMTError too."""
    try:
        return _model_from_checkpoint(checkpoint, source, architecture)
    except (KeyError, TypeError, ValueError) as error:
        raise NMTError(f"{source}: incompatible checkpoint ({type(error).__name__}: {error}); "
                       f"use a checkpoint written by this project's training") from None


def _model_from_checkpoint(checkpoint: dict[str, Any], source: str, architecture: str | None
                           ) -> tuple[TranslationModel, Config, Vocab, Vocab]:
    config = build_saved_config(checkpoint["config"], source=source)
    if architecture is not None and architecture != config.model.architecture:
        raise NMTError(
            f"{source} holds a model.architecture = {config.model.architecture} model, but the "
            f"config names model.architecture = {architecture}: pass the config this checkpoint "
            f"was trained with, or a checkpoint whose model.architecture is {architecture}")
    src_vocab, tgt_vocab = Vocab(checkpoint["src_vocab"]), Vocab(checkpoint["tgt_vocab"])
    model = build_model(config.model, len(src_vocab), len(tgt_vocab))
    try:
        model.load_state_dict(inference_weights(checkpoint))
    except RuntimeError as error:
        raise NMTError(f"{source}: weights do not fit the model its config describes: {error}") from None
    return model.eval(), config, src_vocab, tgt_vocab


def inference_weights(checkpoint: dict[str, Any]) -> dict[str, Any]:
    """The weights to translate with: the moving average where training kept one."""
    return checkpoint.get("averaged_model") or checkpoint["model"]


def rng_state() -> dict[str, Any]:
    """Every random generator training uses, in a form weights_only loading accepts."""
    state = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def load_initial_weights(model: nn.Module, path: str | Path, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    """Fine-tuning (training.init_from): put a trained checkpoint's weights into a new run's model.
    The vocabularies must be the same, token for token, or the embeddings would mean other words."""
    checkpoint = load_checkpoint(path)
    for side, vocab, key in (("source", src_vocab, "src_vocab"), ("target", tgt_vocab, "tgt_vocab")):
        if checkpoint.get(key) != vocab.itos:
            raise NMTError(f"training.init_from = {path}: its {side} vocabulary is not this run's "
                           f"(another data config?); fine-tune on the data it was trained on")
    try:
        model.load_state_dict(inference_weights(checkpoint))
    except RuntimeError as error:
        raise NMTError(f"training.init_from = {path}: its weights do not fit this run's model "
                       f"(another model config?): {error}") from None
