"""Several models of one recipe trained side by side (training.members): an ensemble inside one
time budget.

On a small CPU one process does not keep every core busy: on the project's 2-core AMD machine
one process with 2 threads trained the default at 2,230 target tokens a second, two processes of
one thread each at 1,650 each (30-minute averages, docs/training.md). `training.members: N`
trains N models at once, each in its own process with its own seed (seed, seed + 1, ...), its
own share of the cores (cores ÷ N threads, pinned to those cores) and the whole time budget;
`make eval`, `make translate`, `make serve` and `make align` use them as one ensemble
(nmt/checkpoints/choose.py), each member averaged as eval.average says.

Member 1 trains in runs/<name>/ itself, so that every tool that reads one model (alignment, the
TensorBoard pictures, a report row) reads it as before; member k >= 2 trains in
runs/<name>/member<k>/ (nmt/checkpoints/member_dirs.py), a run folder of its own, and logs to
its train.log there. Rerunning the command resumes every member. Ctrl-C reaches every member;
SIGTERM to this process stops member 1 and then the others, each saving its checkpoint first.

Under torchrun the members start no processes of their own: torchrun's ranks are split into one
group per member (nmt/training/distributed.py) and each rank trains its group's member_config,
logging to the console as any rank does (docs/distributed.md).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import multiprocessing
import os
import sys
from pathlib import Path

from nmt.checkpoints.member_dirs import member_run_dirs
from nmt.config.schema import Config
from nmt.errors import NMTError
from nmt.runtime import pin_to_cores, usable_cores

log = logging.getLogger(__name__)


def member_config(config: Config, k: int) -> Config:
    """Member k's config: member 1 is `config` itself, member k >= 2 a run of its own in
    runs/<name>/member<k>/ with seed + k - 1 (and training.members = 1: it is one model)."""
    if k == 1:
        return config
    run_dir = member_run_dirs(config)[k - 1]
    return dataclasses.replace(
        config, name=run_dir.name, runs_dir=str(run_dir.parent), seed=config.seed + k - 1,
        training=dataclasses.replace(config.training, members=1))


def member_configs(config: Config) -> list[Config]:
    """Every member's config (member_config), each with its share of the CPU threads."""
    training = config.training
    threads = training.threads or max(1, len(usable_cores()) // training.members)
    shared = dataclasses.replace(config, training=dataclasses.replace(training, threads=threads))
    return [member_config(shared, k) for k in range(1, training.members + 1)]


def train_side_by_side(config: Config, command: str | None) -> Path:
    """Train every member at once (members 2..N in child processes); returns runs/<name>/.
    One process's way; under torchrun, train_one trains each rank's member instead."""
    from nmt.data.prepare import prepare
    from nmt.training.loop import train_one

    prepare(config)  # once, before the members look for it
    configs = member_configs(config)
    cores = usable_cores()
    threads = configs[0].training.threads
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked torch state
    children = []
    for index, member in enumerate(configs[1:], start=1):
        member_cores = cores[index * threads:(index + 1) * threads]
        child = context.Process(target=_train_member, name=member.name,
                                args=(member, command, member_cores))
        child.start()
        children.append((member, child))
    log.info("training %d members side by side, %d thread(s) each; member 1 here, the others "
             "in %s", len(configs), threads, config.run_dir / "member<k>" / "train.log")
    finished = False
    try:
        pin_to_cores(cores[:threads])
        run_dir = train_one(configs[0], command)  # not train(): it would start the members again
        finished = _finished(run_dir)
    finally:
        pin_to_cores(cores)  # this process's cores as they were
        for member, child in children:
            if not finished:  # member 1 stopped early (a signal, an error): stop the others too
                child.terminate()  # SIGTERM: the member saves its checkpoint and leaves
            child.join()
    failed = [f"{member.run_dir / 'train.log'} (exit status {child.exitcode})"
              for member, child in children if child.exitcode != 0]
    if failed:
        raise NMTError(f"a member's training failed; see {', '.join(failed)}")
    return run_dir


def _train_member(config: Config, command: str | None, cores: list[int]) -> None:
    """A child process: train one member, its output in runs/<name>/member<k>/train.log."""
    from nmt.cli import setup_logging
    from nmt.training.loop import train_one

    config.run_dir.mkdir(parents=True, exist_ok=True)
    with open(config.run_dir / "train.log", "a", encoding="utf-8") as log_file:
        os.dup2(log_file.fileno(), sys.stdout.fileno())
        os.dup2(log_file.fileno(), sys.stderr.fileno())
    setup_logging()
    pin_to_cores(cores)
    try:
        train_one(config, command)
    except NMTError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)


def _finished(run_dir: Path) -> bool:
    """Whether the run's training ended by its own stopping rule (not by a signal)."""
    try:
        return bool(json.loads((run_dir / "train_summary.json").read_text())["finished"])
    except (OSError, ValueError, KeyError):
        return False
