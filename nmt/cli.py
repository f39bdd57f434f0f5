"""What every script in scripts/ shares: logging set-up and errors without tracebacks.

A script is thin: it builds an argparse parser, adds `config_arguments` with its stage, and
hands a `main(args)` to `run_cli`:

    def main(args):
        config = load_config(args.config, args.overrides)
        ...

    if __name__ == "__main__":
        parser = argparse.ArgumentParser(description=__doc__)
        config_arguments(parser, "evaluate")
        run_cli(main, parser)

An override of a key the stage does not read (nmt/config/stages.py: `search.beam_size=3` to
train) is refused before `main` runs. An NMTError (bad config, missing data, ...) is printed as
`error: <message>` on stderr with exit status 2; any other exception is a bug and keeps its
traceback.

This module must not import torch: a decoding script calls `sleep_while_waiting` before torch
loads OpenMP, which reads its wait policy then.
"""

from __future__ import annotations

import argparse
import functools
import logging
import os
import runpy
import sys
from pathlib import Path
from typing import Callable, Sequence

from nmt.config.stages import STAGES, check_overrides
from nmt.errors import NMTError
from nmt.logs import setup_logging


def config_arguments(parser: argparse.ArgumentParser, stage: str | None = None) -> None:
    """Add the positional experiment YAML and its `section.key=value` overrides; with `stage`
    (a key of nmt/config/stages.py's STAGES), `run_cli` refuses an override it does not read."""
    if stage is not None and stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; one of {', '.join(STAGES)}")
    parser.add_argument("config", help="experiment YAML, e.g. configs/tatoeba.yaml")
    parser.add_argument("overrides", nargs="*", metavar="section.key=value",
                        help="override config values, e.g. data.workers=1 training.lr=3e-4"
                             + (f" (the keys the {stage} stage reads)" if stage else ""))
    parser.set_defaults(config_stage=stage)


def run_cli(main: Callable[[argparse.Namespace], None], parser: argparse.ArgumentParser,
            argv: Sequence[str] | None = None) -> None:
    """Parse `argv`, set up logging, run `main`; exit 2 with a one-line message on NMTError."""
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages too")
    args = parser.parse_intermixed_args(argv)  # overrides may follow options too
    setup_logging(logging.DEBUG if args.verbose else logging.INFO)
    try:
        check_overrides(getattr(args, "config_stage", None), getattr(args, "overrides", ()),
                        parser.prog if parser.prog.endswith(".py") else "")
        main(args)
    except NMTError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)


def sleep_while_waiting() -> None:
    """Idle OpenMP threads sleep instead of spinning; call it before the first torch import.

    On a 2-core machine shared with other work, spinning threads wait on each other and decoding
    slows down several times. Training does not call it: on a quiet machine spinning trains faster.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


# The installed commands (pyproject's [project.scripts]): `nmt-train CONFIG ...` is
# `python scripts/train.py CONFIG ...`, the same file, so the two can never drift apart. They
# run the scripts of the checkout the package is installed from (`pip install -e .`, as `make
# setup` does).
SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _run_script(stage: str) -> None:
    script = SCRIPTS / f"{stage}.py"
    if not script.is_file():
        sys.exit(f"error: nmt-{stage} runs {script}, which is not here: install the package from "
                 f"a checkout with `pip install -e .` (as `make setup` does)")
    sys.argv[0] = str(script)
    runpy.run_path(str(script), run_name="__main__")


prepare = functools.partial(_run_script, "prepare")
train = functools.partial(_run_script, "train")
evaluate = functools.partial(_run_script, "evaluate")
translate = functools.partial(_run_script, "translate")
align = functools.partial(_run_script, "align")
report = functools.partial(_run_script, "report")
serve = functools.partial(_run_script, "serve")
tune = functools.partial(_run_script, "tune")
compare = functools.partial(_run_script, "compare")
dual_score = functools.partial(_run_script, "dual_score")
