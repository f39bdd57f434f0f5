"""The one logging set-up every process uses: a script (nmt/cli.py) and a member trained in a
process of its own (nmt/training/loop.py), so their lines read alike in a console and a train.log.

No torch here: nmt/cli.py imports this before torch loads (see its docstring)."""

from __future__ import annotations

import logging

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def setup_logging(level: int = logging.INFO) -> None:
    logging.basicConfig(level=level, format=FORMAT, datefmt="%H:%M:%S")
