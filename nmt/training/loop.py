"""The train stage: from prepared data to checkpoints and TensorBoard curves.

`train` trains one model (`train_one`) or, with training.members > 1, every member at once
(`train_side_by_side`: members 2..N in processes of their own; nmt/training/members.py says what
each member is). `train_one` reads top to bottom: start the processes, prepare the data, claim
the run folder, distill the training targets (training.distill_from), load the data, build the
model (or resume it from last.pt), then train until max_steps, max_epochs, max_minutes or early
stopping ends it (nmt/training/trainer.py names each step of the loop). Rerunning the same
command resumes.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

from nmt.config.schema import Config
from nmt.data.prepare import prepare
from nmt.errors import NMTError
from nmt.io import atomic_write_json
from nmt.logs import setup_logging
from nmt.model import attention_name, count_parameters
from nmt.runtime import cpu_model, pin_to_cores, seed_everything, usable_cores
from nmt.training.members import member_config, member_configs
from nmt.training.progress import StopSignal
from nmt.training.setup import (distill_everywhere, load_training_data, open_run_dir,
                                prepare_everywhere, start_processes)
from nmt.training.trainer import Trainer

log = logging.getLogger(__name__)


def train(config: Config, command: str | None = None) -> Path:
    """Train (or resume) the experiment; returns the run directory.

    `command`, the command line that started it, is appended to runs/<name>/commands.txt so that
    every figure in the results table can be traced back to how it was made. With
    training.members > 1 every member trains at once: in processes of their own, or under
    torchrun each in its own group of the ranks (nmt/training/distributed.py)."""
    if config.training.trained_models > 1 and int(os.environ.get("WORLD_SIZE", "1")) == 1:
        return train_side_by_side(config, command)
    return train_one(config, command)


def train_side_by_side(config: Config, command: str | None) -> Path:
    """Train every member at once (members 2..N in child processes); returns runs/<name>/.
    One process's way; under torchrun, train_one trains each rank's member instead."""
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


def train_one(config: Config, command: str | None = None) -> Path:
    """Train (or resume) one model: the experiment, or one member of it. Under torchrun with
    training.members > 1, `config` is the experiment's and each rank trains its group's member;
    returns runs/<name>/ on every rank (member 1's folder, as train does)."""
    distributed, device, threads = start_processes(config.training)
    experiment, config = config, member_config(config, distributed.member)
    seed_everything(config.seed + distributed.rank)
    prepared = prepare_everywhere(config, distributed)
    run_dir = open_run_dir(config, distributed, command)
    targets = distill_everywhere(config, prepared, distributed, device)  # None: the references
    data = load_training_data(config, prepared, targets)

    trainer = Trainer(config, data, run_dir, distributed, device)
    trainer.resume_or_initialise()
    trainer.start(threads)
    with StopSignal() as stop:
        trainer.run(stop)

    if distributed.is_main:
        write_summary(run_dir, config, trainer, threads)
    if trainer.interrupted and distributed.is_main:
        log.warning("stopped by signal at step %d; checkpoint saved, rerun the same command to resume",
                    trainer.progress.step)
    del trainer  # its DDP wrapper holds the process group: let close() free both
    distributed.close()
    return experiment.run_dir


def write_summary(run_dir: Path, config: Config, trainer: Trainer, threads: int) -> None:
    """runs/<name>/train_summary.json: what make report tabulates, with the machine it ran on."""
    progress, training = trainer.progress, config.training
    path = run_dir / "train_summary.json"
    now = time.time()
    ended_at = _utc(now)
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        previous = {}
    if not isinstance(previous, dict) or (previous.get("step") or 0) > progress.step:
        previous = {}  # not this run's past: a run started afresh in its folder
    spans = list(previous.get("spans") or [])
    if previous.get("step") == progress.step and previous.get("ended_at"):
        ended_at = previous["ended_at"]  # a rerun that found the budget spent trained nothing new
    else:  # this session's wall clock: the training seconds it added, up to now
        session = max(0.0, progress.train_seconds - (previous.get("train_seconds") or 0))
        spans.append([_utc(now - session), ended_at])
    atomic_write_json(path, {
        "name": config.name, "architecture": config.model.architecture,
        "attention": attention_name(asdict(config.model)),
        "parameters": count_parameters(trainer.model), "step": progress.step, "epoch": progress.epoch,
        "train_seconds": round(progress.train_seconds, 1),
        "cpu_seconds": round(progress.cpu_seconds, 3),
        "validation_seconds": round(progress.validation_seconds, 1), "threads": threads,
        "cpu": cpu_model(), "device": trainer.device.type,
        "dtype": "bfloat16" if trainer.bf16 else "float32",
        "best_dev_bleu": progress.best_score if training.early_stopping_metric == "bleu" else None,
        "target_tokens": progress.target_tokens, "skipped_batches": progress.skipped_batches,
        "finished": not trainer.interrupted,
        # When this training ended (UTC) and the [start, end] of each session that trained it (a
        # resumed run has several), so that an ensemble of runs trained side by side counts its
        # minutes once (make report)
        "ended_at": ended_at, "spans": spans,
    })


def _utc(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
