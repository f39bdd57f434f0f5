"""Where each model of a run trained side by side keeps its run folder: the layout training
writes. Readers find a run's models through its manifest (nmt/checkpoints/manifest.py), which
training writes from this layout, never by a folder's number.

A run trains `training.members` translating models and, after them, `training.channel_members`
channel models (English → Chinese, model.direction: reverse). Model 1 trains in runs/<name>/
itself; model k >= 2 in runs/<name>/member<k>/, the channel models last.

Here, beside the code that reads run folders (nmt/checkpoints/choose.py), rather than in
nmt/training/members.py, which writes them: reading checkpoints must not import training
(nmt/training/distill.py reads teachers through nmt/checkpoints, so the other way is a cycle).
"""

from __future__ import annotations

from pathlib import Path

from nmt.config.schema import Config


def member_run_dirs(config: Config) -> list[Path]:
    """runs/<name>/ (model 1) and runs/<name>/member<k>/ for every other model trained beside it."""
    return [config.run_dir] + [config.run_dir / f"member{k}"
                               for k in range(2, config.training.trained_models + 1)]


def is_channel_member(config: Config, k: int) -> bool:
    """Whether model k (1-based) of the run is a channel member."""
    return k > config.training.members
