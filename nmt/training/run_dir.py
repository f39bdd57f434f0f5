"""The run directory `runs/<name>/`: never silently reused by a different experiment."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import yaml

from nmt.config.schema import DATA_LOCATION_KEYS, Config

from nmt.checkpoints.manifest import write_manifest
from nmt.config.loader import save_config
from nmt.config.migrate import config_in_sections
from nmt.errors import NMTError

# Keys that may change between a run and its resumption: how long, where, how fast, how to decode.
# runs_dir is where the folder is, not what it holds: a run moved or reached by another spelling
# of its path resumes.
RESUMABLE_PREFIXES = ("runs_dir", 
    "training.max_steps", "training.max_epochs", "training.max_minutes", "training.overwrite",
    "training.threads", "training.examples",  # what TensorBoard shows, not what is trained
    "training.device", "search.", "eval.", *(f"data.{key}" for key in DATA_LOCATION_KEYS),
)


def _flatten(tree: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def config_differences(saved: dict, current: dict) -> list[str]:
    """Dotted keys whose values differ, ignoring those a resumed run may change.

    A key the saved config lacks (it was added to the schema after the run started) differs only
    when the current value is not the key's default: the run was trained with that default."""
    old, new = _flatten(saved), _flatten(current)
    defaults = _flatten(Config().to_dict())
    return sorted(
        key for key in new
        if old.get(key, defaults.get(key)) != new.get(key) and not key.startswith(RESUMABLE_PREFIXES)
    )


def claim_run_dir(config: Config) -> Path:
    """Create or reuse `runs/<name>/`, refusing one that holds another experiment's config.

    With `training.overwrite=true` the old checkpoints and curves are deleted instead.
    """
    run_dir = config.run_dir
    saved_path = run_dir / "config.yaml"
    if saved_path.is_file():
        # an older version may have saved it with a flat model section: the same recipe
        saved = config_in_sections(yaml.safe_load(saved_path.read_text(encoding="utf-8")) or {})
        differences = config_differences(saved, config.to_dict())
        if differences and not config.training.overwrite:
            shown = ", ".join(differences[:8]) + (" ..." if len(differences) > 8 else "")
            raise NMTError(
                f"{run_dir} holds a different experiment (differs in: {shown}). Give this one "
                f"another `name`, or pass training.overwrite=true to delete that run's checkpoints"
            )
        if differences:
            for child in ("checkpoints", "tensorboard"):
                shutil.rmtree(run_dir / child, ignore_errors=True)
            named = ("train_summary.json", "results.json", "guided_links.txt")
            # results.<label>.json: the glob gives paths inside run_dir already
            for stale in [*(run_dir / name for name in named), *run_dir.glob("results.*.json")]:
                stale.unlink(missing_ok=True)
    save_config(config, saved_path)
    write_manifest(config)  # what each of its models is (an older folder gets one here)
    return run_dir


def record_command(run_dir: Path, command: str) -> None:
    """Append `command` with the time to run_dir/commands.txt: how each stage of the run was made."""
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(run_dir / "commands.txt", "a", encoding="utf-8") as log_file:
            log_file.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')}  {command}\n")
    except OSError as error:
        raise NMTError(f"{run_dir / 'commands.txt'}: cannot write ({error.strerror or error}); "
                       f"free some space or choose a runs_dir you can write to") from None
