"""Where each member of a run trained with training.members > 1 keeps its run folder.

Here, beside the code that reads run folders (nmt/checkpoints/choose.py), rather than in
nmt/training/members.py, which writes them: reading checkpoints must not import training
(nmt/training/distill.py reads teachers through nmt/checkpoints, so the other way is a cycle).
"""

from __future__ import annotations

from pathlib import Path

from nmt.config.schema import Config


def member_run_dirs(config: Config) -> list[Path]:
    """runs/<name>/ (member 1) and runs/<name>/member<k>/ for k = 2..training.members."""
    return [config.run_dir] + [config.run_dir / f"member{k}"
                               for k in range(2, config.training.members + 1)]
