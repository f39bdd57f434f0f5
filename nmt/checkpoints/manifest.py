"""The run manifest, runs/<name>/run.json: what each model of a run is, said by the run folder
itself rather than by a folder's number.

    {"format": 1, "models": [
        {"folder": ".",       "role": "translating", "direction": "forward"},
        {"folder": "member2", "role": "translating", "direction": "forward"},
        {"folder": "member3", "role": "channel",     "direction": "reverse"}]}

Training writes it when it claims the run folder (nmt/training/run_dir.py), from the layout
nmt/checkpoints/member_dirs.py gives. Everything that reads a run finds its models here, by
role: a config that asks for fewer translating models (`training.members=1`) takes the first
of them, never a channel model in their place. A run folder written before manifests existed
is read from the config its training saved (config.yaml), as it was trained, and gets its
manifest on its next write (training, or the averaging step of nmt/decoding/materialize.py).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from nmt.checkpoints.member_dirs import member_run_dirs
from nmt.config.loader import load_saved_config
from nmt.config.schema import Config
from nmt.errors import NMTError
from nmt.io import atomic_write_json

MANIFEST = "run.json"
FORMAT = 1
ROLES = ("translating", "channel")


@dataclass(frozen=True)
class RunModel:
    """One model of a run: its folder (runs/<name>/ or a member's), role and direction."""

    folder: Path
    role: str  # translating, or channel: a reverse model that rescores (log p(source | y))
    direction: str  # forward (Chinese → English) or reverse

    def to_dict(self, run_dir: Path) -> dict:
        folder = "." if self.folder == run_dir else self.folder.relative_to(run_dir).as_posix()
        return {"folder": folder, "role": self.role, "direction": self.direction}


def planned_models(config: Config) -> list[RunModel]:
    """The models training makes for `config`: training.members forward, then
    training.channel_members reverse ones (a reverse run's own model is a channel model)."""
    own = config.model.direction
    return [RunModel(folder, "channel" if k > config.training.members or own == "reverse"
                     else "translating", "reverse" if k > config.training.members else own)
            for k, folder in enumerate(member_run_dirs(config), start=1)]


def write_manifest(config: Config) -> Path:
    """runs/<name>/run.json for `config`'s models (training, when it claims the folder)."""
    path = config.run_dir / MANIFEST
    atomic_write_json(path, {"format": FORMAT, "models": [
        model.to_dict(config.run_dir) for model in planned_models(config)]})
    return path


def run_models(config: Config) -> list[RunModel]:
    """The models `config`'s run folder holds: its manifest, else (an older run folder) the
    models of the config its training saved, else (not trained yet) of `config` itself."""
    path = config.run_dir / MANIFEST
    if not path.is_file():
        return planned_models(_saved_or(config))
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        models = [RunModel(config.run_dir / entry["folder"], entry["role"], entry["direction"])
                  for entry in manifest["models"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise NMTError(f"{path}: unreadable run manifest ({error}); train the run again to "
                       f"rewrite it, or delete it to read the run from its config.yaml") from None
    for model in models:
        if model.role not in ROLES or (model.role == "channel") != (model.direction == "reverse"):
            raise NMTError(f"{path}: a {model.direction} model cannot be a {model.role} model "
                           f"({model.folder}); a channel model is a reverse one")
    return models


def translating_run_dirs(config: Config) -> list[Path]:
    """The folders of the first training.members translating models of the run."""
    return _with_role(config, "translating", config.training.members)


def channel_run_dirs(config: Config) -> list[Path]:
    """The folders of the first training.channel_members channel models of the run."""
    return _with_role(config, "channel", config.training.channel_members)


def _with_role(config: Config, role: str, count: int) -> list[Path]:
    held = [model.folder for model in run_models(config) if model.role == role]
    if len(held) < count:
        key = "training.members" if role == "translating" else "training.channel_members"
        raise NMTError(f"{config.run_dir} holds {len(held)} {role} model(s) but {key} = {count} "
                       f"asks for {count}; set {key}={len(held)}, or train the run with {count}")
    return held[:count]


def _saved_or(config: Config) -> Config:
    """The config the run's training saved (how its folders were laid out), else `config`."""
    saved = config.run_dir / "config.yaml"
    if not saved.is_file():
        return config
    return dataclasses.replace(load_saved_config(saved), runs_dir=config.runs_dir, name=config.name)
