"""The model in training and the steps of its loop: train on a batch, log, validate, save, stop?

`Trainer` holds what changes as a run trains (model, optimizer, schedule, moving average,
progress) and names each step the loop takes. `run` reads top to bottom:

    for each epoch, for each batch:  train_step → after_step (log, validate, save) → must_stop?
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict
from pathlib import Path
from typing import cast

import torch
from torch.nn.parallel import DistributedDataParallel

from nmt.align.guided import for_training as guided_alignment
from nmt.checkpoints.file import (TrainingState, keep_step_checkpoint, load_checkpoint,
                                  load_initial_weights, make_checkpoint, rng_state, save_checkpoint,
                                  set_rng_state)
from nmt.config.schema import Config
from nmt.data.batching import Example, collate, make_batches
from nmt.model import build_model, count_parameters, describe
from nmt.runtime import use_bf16
from nmt.training.board import Board
from nmt.training.distributed import Distributed
from nmt.training.ema import ExponentialMovingAverage
from nmt.training.loss import summed_loss
from nmt.training.optim import Schedule, build_optimizer
from nmt.training.progress import Progress, StopSignal
from nmt.training.progress_bar import progress_bar
from nmt.training.setup import TrainingData
from nmt.training.validate import DevResult, validate
from nmt.training.word_dropout import word_dropout

log = logging.getLogger(__name__)


class Clock:
    """Wall-clock and CPU time charged to the run, and the tokens/s of the current log window."""

    def __init__(self):
        self.window_tokens, self.window_start = 0, time.perf_counter()
        self.last_tick, self.last_cpu_tick = self.window_start, time.process_time()

    def tick(self, progress: Progress, tokens: int) -> None:
        """After each step: its tokens, its wall-clock time (validation included) and CPU time."""
        self.window_tokens += tokens
        now, cpu_now = time.perf_counter(), time.process_time()
        progress.train_seconds += now - self.last_tick
        progress.cpu_seconds += cpu_now - self.last_cpu_tick
        self.last_tick, self.last_cpu_tick = now, cpu_now

    def tokens_per_second(self) -> float:
        return self.window_tokens / (time.perf_counter() - self.window_start)

    def restart_window(self) -> None:
        self.window_tokens, self.window_start = 0, time.perf_counter()


class Trainer:
    def __init__(self, config: Config, data: TrainingData, run_dir: Path, distributed: Distributed,
                 device: torch.device):
        self.config, self.training, self.data = config, config.training, data
        self.run_dir, self.checkpoints = run_dir, run_dir / "checkpoints"
        self.distributed, self.device = distributed, device
        self.model = build_model(config.model, len(data.src_vocab), len(data.tgt_vocab)).to(device)
        self.optimizer = build_optimizer(self.model, self.training)
        self.schedule = Schedule(self.optimizer, self.training)
        self.ema = (ExponentialMovingAverage(self.model, self.training.ema_decay)
                    if self.training.ema_decay > 0 else None)
        self.progress = Progress()
        self.dev_scores: dict[int, float] = {}  # step → dev score of this session's validations
        self.interrupted = self.time_is_up = False

    def resume_or_initialise(self) -> None:
        """Go on from last.pt where the run has one (rank 0's copy for every rank: on several
        machines only rank 0's disk holds the run); else start from training.init_from, if set."""
        state = None
        if self.distributed.is_main and (self.checkpoints / "last.pt").is_file():
            state = load_checkpoint(self.checkpoints / "last.pt")
        state = self.distributed.broadcast(state)
        if state is not None:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.schedule.load_state_dict(state["scheduler"])
            self.progress = Progress(**state["progress"])
            if self.ema is not None and state.get("averaged_model") is not None:
                self.ema.load(state["averaged_model"], state["averaged_updates"])
            if self.distributed.rank < len(state["rng"]):  # else: a new rank keeps its fresh seed
                set_rng_state(state["rng"][self.distributed.rank])
            log.info("resuming from %s at step %d", self.checkpoints / "last.pt", self.progress.step)
        elif self.training.init_from:
            load_initial_weights(self.model, self.training.init_from, self.data.src_vocab,
                                 self.data.tgt_vocab)
            log.info("starting from the weights of %s", self.training.init_from)

    def start(self, threads: int) -> None:
        """What the steps need once the weights are in place: the DDP wrapper, the guided
        alignment loss, bf16 autocast and TensorBoard."""
        training, distributed = self.training, self.distributed
        self.trained = (DistributedDataParallel(self.model, process_group=distributed.group)
                        if distributed.enabled else self.model)  # group None: the world's
        # (guide,) adds the guided alignment loss to summed_loss; () leaves its call as it was
        self.guided = () if training.guided_alignment == 0 else (guided_alignment(
            training.guided_alignment, self.data.train_examples, self.run_dir, distributed),)
        self.bf16 = use_bf16(training.bf16, self.device)
        self.autocast = torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.bf16)
        self.board = Board(self.run_dir / "tensorboard", enabled=distributed.is_main)
        log.info("model: %s parameters, %s; %d training pairs; device %s%s, %d threads, "
                 "%d ranks", f"{count_parameters(self.model):,}", describe(self.config.model),
                 len(self.data.train_examples), self.device, " (bf16 autocast)" if self.bf16 else "",
                 threads, distributed.world_size)

    def run(self, stop: StopSignal) -> None:
        """Train until max_steps, max_epochs, max_minutes, early stopping or a signal; then a
        last validation and checkpoint where the last step had none."""
        self.bar = progress_bar(self.progress.step, self.training.max_steps,
                                enabled=self.distributed.is_main)
        self.clock = Clock()
        self.validated_at = self.saved_at = self.progress.step
        # A run resumed with its minutes spent (`make eval` reruns `make train`) ends at once,
        # without one more step and validation; every rank resumed the same progress.
        self.time_is_up = (self.training.max_minutes is not None
                           and self.progress.train_seconds >= 60 * self.training.max_minutes)
        self.trained.train()
        while not self.finished() and not self.interrupted:
            if self.run_epoch(stop):
                break
        if not self.interrupted and self.validated_at != self.progress.step:
            self.run_validation()
        if self.progress.step != self.saved_at:
            self.save("last.pt")
        self.bar.close()
        self.board.close()

    def run_epoch(self, stop: StopSignal) -> bool:
        """The rest of this epoch's batches; True when training ends before the epoch does."""
        batches = make_batches(self.data.train_examples, self.training.batch_tokens,
                               self.config.seed, self.progress.epoch)
        for indices in batches[self.progress.batch_in_epoch:]:
            stepped = self.train_step(indices)
            if stepped is None:  # a non-finite loss: the batch was skipped
                continue
            self.after_step(*stepped)
            if self.must_stop(stop):
                return True
        self.progress.epoch += 1
        self.progress.batch_in_epoch = 0
        return False

    def train_step(self, indices: list[int]) -> tuple[float, float] | None:
        """Forward, backward, clip and update on one global batch; (loss, gradient norm), or None
        when the loss was not finite and the batch was skipped."""
        progress, training, distributed = self.progress, self.training, self.distributed
        progress.batch_in_epoch += 1
        local, weight = distributed.shard(indices), 1.0
        if not local:  # fewer sentences than ranks: this rank must still join the
            local, weight = indices[:1], 0.0  # gradient all-reduce, contributing nothing
        # Every rank knows the global batch, so it can normalise without communicating.
        examples = self.data.train_examples
        global_tokens = sum(len(examples[i].tgt) + 1 for i in indices)
        # collate only indexes its examples, as PairArrays allows: its list[Example] (in
        # nmt/data/batching.py) is narrower than what it takes.
        batch = word_dropout(collate(cast(list[Example], examples), local), training.src_word_dropout,
                             training.tgt_word_dropout).to(self.device)
        self.schedule.before_step(progress.step + 1)
        with self.autocast:
            loss = weight * summed_loss(self.trained, batch, training.label_smoothing, *self.guided) / (
                global_tokens / distributed.world_size)  # DDP averages over ranks
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), training.clip_norm)
        if not (math.isfinite(loss.item()) and math.isfinite(grad_norm.item())):
            progress.skip_non_finite(training, loss.item())
            self.optimizer.zero_grad(set_to_none=True)
            return None
        self.optimizer.step()
        progress.step += 1
        if self.ema is not None:
            self.ema.update(self.model, progress.step)
        progress.target_tokens += global_tokens
        self.clock.tick(progress, global_tokens)
        return loss.item(), grad_norm.item()

    def after_step(self, loss: float, grad_norm: float) -> None:
        """Log, validate and save at their intervals."""
        step, training = self.progress.step, self.training
        self.bar.update(1)
        if step % training.log_every == 0:
            self.log_training(loss, grad_norm)
        if step % training.validate_every == 0:
            self.run_validation()
            self.validated_at = step
            self.clock.restart_window()  # tokens/s: training only
        if step % training.checkpoint_every == 0:
            self.save("last.pt")
            self.saved_at = step

    def must_stop(self, stop: StopSignal) -> bool:
        """A signal reaches the ranks at slightly different times: all stop after one step.
        Rank 0's clock decides max_minutes for every rank."""
        distributed = self.distributed
        stopping = distributed.any(stop.received is not None)
        if self.training.max_minutes is not None:
            self.time_is_up = distributed.any(distributed.is_main and self.progress.train_seconds
                                              >= 60 * self.training.max_minutes)
        if stopping or self.finished():
            self.interrupted = stopping
            return True
        return False

    def finished(self) -> bool:
        training, progress = self.training, self.progress
        return ((training.max_steps is not None and progress.step >= training.max_steps)
                or (training.max_epochs is not None and progress.epoch >= training.max_epochs)
                or self.time_is_up or progress.bad_validations >= training.patience)

    def log_training(self, loss: float, grad_norm: float) -> None:
        # Each rank's loss is its share's; their mean is the global batch's loss.
        shown_loss = sum(self.distributed.gather(loss)) / self.distributed.world_size
        tokens_per_second = self.clock.tokens_per_second()
        self.board.scalars(self.progress.step, "train", {
            "loss": shown_loss, "perplexity": math.exp(min(shown_loss, 50)),
            "lr": self.schedule.lr, "grad_norm": grad_norm, "tokens_per_second": tokens_per_second})
        self.bar.set_postfix(loss=f"{shown_loss:.3f}", tok_s=f"{tokens_per_second:.0f}")
        self.clock.restart_window()

    def run_validation(self) -> None:
        """Rank 0 scores the dev set (the moving average where there is one) and tells the
        others; every rank counts it toward early stopping and the plateau schedule."""
        start = time.perf_counter()
        result, scored = None, self.model if self.ema is None else self.ema.model
        if self.distributed.is_main:
            result = validate(scored, self.data.dev, self.data.tgt_vocab, self.data.detokenizer,
                              self.config.search, self.training.batch_tokens, self.device)
        scores = self.distributed.broadcast(None if result is None else (result.bleu, result.loss))
        score = scores[0] if self.training.early_stopping_metric == "bleu" else -scores[1]
        self.dev_scores[self.progress.step] = score
        improved = self.progress.record_validation(score)
        self.schedule.after_validation(improved)
        if result is not None:
            self.report_validation(result, improved, scored)
        if improved:
            self.save("best.pt")
        self.progress.validation_seconds += time.perf_counter() - start  # dev search, examples, save

    def report_validation(self, result: DevResult, improved: bool, scored) -> None:
        progress, board = self.progress, self.board
        board.scalars(progress.step, "dev", {"loss": result.loss, "perplexity": result.perplexity,
                                             "bleu": result.bleu, "chrf": result.chrf})
        self.data.shown.log(board, progress.step, scored, self.data.dev, result, self.device,
                            self.data.tgt_vocab)
        log.info("step %d (%.1f min, %.1f CPU min): dev loss %.3f, ppl %.1f, BLEU %.2f, "
                 "chrF %.2f%s", progress.step, progress.train_seconds / 60,
                 progress.cpu_seconds / 60, result.loss, result.perplexity, result.bleu,
                 result.chrf, " (new best)" if improved else "")
        board.scalars(progress.step, "time", {"minutes": progress.train_seconds / 60,
                                              "cpu_minutes": progress.cpu_seconds / 60})

    def save(self, name: str) -> None:
        """checkpoints/<name> on rank 0, with every rank's generators for an exact resume; a save
        of last.pt also keeps a weights-only step checkpoint with training.keep_checkpoints."""
        states = self.distributed.gather(rng_state())
        if not self.distributed.is_main:
            return
        data, ema = self.data, self.ema
        state = make_checkpoint(
            self.config.to_dict(), data.src_vocab.itos, data.tgt_vocab.itos, self.model.state_dict(),
            progress=asdict(self.progress), subword=data.subword_models,
            training=TrainingState(
                optimizer=self.optimizer.state_dict(), scheduler=self.schedule.state_dict(),
                rng=states, averaged_model=None if ema is None else ema.weights(),
                averaged_updates=0 if ema is None else ema.updates))
        save_checkpoint(self.checkpoints / name, state)
        if name == "last.pt" and self.training.keep_checkpoints:
            keep_step_checkpoint(self.checkpoints, state, self.training.keep_checkpoints,
                                 self.dev_scores.get(self.progress.step))
