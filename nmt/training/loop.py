"""The train stage: from prepared data to checkpoints and TensorBoard curves.

Read top to bottom: set up, resume if a checkpoint exists, then the loop of
batch → loss → backward → clip → step, validating and checkpointing every so many steps until
max_steps, max_epochs or early stopping ends it. Rerunning the same command resumes.
"""

from __future__ import annotations

import logging
import math
import signal
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from nmt.align.guided import for_training as guided_alignment
from nmt.training.ema import WeightAverage
from nmt.training.board import Board
from nmt.checkpoints.file import (keep_step_checkpoint, load_checkpoint, load_initial_weights,
                            rng_state, save_checkpoint, set_rng_state)
from nmt.config.schema import Config
from nmt.data.batching import collate, load_examples, make_batches
from nmt.data.subword import load_models, merge_attention
from nmt.data.tokenize import make_tokenizers
from nmt.data.vocab import Vocab
from nmt.training.distributed import Distributed, device_for
from nmt.errors import NMTError
from nmt.training.examples import DevExamples
from nmt.io import atomic_write_json, read_lines
from nmt.training.loss import summed_loss
from nmt.model import attention_name, build_model, count_parameters, describe
from nmt.training.optim import Schedule, build_optimizer
from nmt.data.prepare import prepare
from nmt.training.run_dir import claim_run_dir, record_command
from nmt.runtime import keep_freed_memory, pick_device, seed_everything, set_threads, use_bf16
from nmt.decoding.translate import alignment_heads
from nmt.training.validate import DevSet, validate
from nmt.training.word_dropout import word_dropout

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of this epoch already trained on
    best_score: float | None = None  # dev BLEU, or minus dev loss
    bad_validations: int = 0  # validations since the best one
    skipped_batches: int = 0  # batches whose loss was not finite
    target_tokens: int = 0
    train_seconds: float = 0.0
    # CPU time of this process (all its threads), validation included: on a shared machine it
    # says what a run cost where wall-clock time also counts the other jobs.
    cpu_seconds: float = 0.0


class StopSignal:
    """SIGINT/SIGTERM ask the loop to save and leave at the next step boundary."""

    def __init__(self):
        self.received: int | None = None
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.received = signum

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def train(config: Config, command: str | None = None) -> Path:
    """Train (or resume) the experiment; returns the run directory.

    `command`, the command line that started it, is appended to runs/<name>/commands.txt so that
    every figure in the results table can be traced back to how it was made."""
    training = config.training
    distributed = Distributed.from_env(pick_device(training.device).type)
    if not distributed.is_main:  # one console: the other ranks speak up only to warn
        logging.getLogger().setLevel(logging.WARNING)
    device = device_for(training.device, distributed)
    keep_freed_memory()
    threads = set_threads(training.threads)
    seed_everything(config.seed + distributed.rank)

    # Rank 0 prepares first, then the first rank of every other machine (whose disk may not be
    # shared: a cache hit where it is), then the rest find the data ready.
    prepared = prepare(config) if distributed.is_main else None
    distributed.barrier()
    if prepared is None and distributed.local_rank == 0:
        prepared = prepare(config)
    distributed.barrier()
    prepared = prepared or prepare(config)
    run_dir = claim_run_dir(config) if distributed.is_main else config.run_dir
    if command is not None and distributed.is_main:
        record_command(run_dir, command)
    distributed.barrier()
    checkpoints = run_dir / "checkpoints"

    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    train_examples = load_examples(prepared.tokens("train", "zh"), prepared.tokens("train", "en"),
                                   src_vocab, tgt_vocab, max_length=training.max_length)
    if not train_examples:
        raise NMTError(f"{prepared.dir}: no training pairs within training.max_length")
    dev = DevSet(
        load_examples(prepared.tokens("dev", "zh"), prepared.tokens("dev", "en"), src_vocab, tgt_vocab),
        [line.split() for line in read_lines(prepared.tokens("dev", "zh"))],
        read_lines(prepared.text("dev", "en")),
        subword=config.data.subword != "none",
    )
    subword_models = load_models(prepared.dir, config.data)  # travel in checkpoints; or None
    _, detokenizer = make_tokenizers(config.data)
    shown = DevExamples.choose(dev.src_tokens, read_lines(prepared.text("dev", "zh")),
                               [line.split() for line in read_lines(prepared.tokens("dev", "en"))],
                               training.examples, training.examples_gold)

    model = build_model(config.model, len(src_vocab), len(tgt_vocab)).to(device)
    optimizer = build_optimizer(model, training)
    schedule = Schedule(optimizer, training)
    average = WeightAverage(model, training.ema_decay) if training.ema_decay > 0 else None
    progress = Progress()
    state = None
    if distributed.is_main and (checkpoints / "last.pt").is_file():
        state = load_checkpoint(checkpoints / "last.pt")
    # Rank 0's copy for every rank: on several machines only rank 0's disk holds the run.
    state = distributed.broadcast(state)
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["scheduler"])
        progress = Progress(**state["progress"])
        if average is not None and state.get("averaged_model") is not None:
            average.load(state["averaged_model"], state["averaged_updates"])
        if distributed.rank < len(state["rng"]):  # else: a new rank keeps its fresh seed
            set_rng_state(state["rng"][distributed.rank])
        log.info("resuming from %s at step %d", checkpoints / "last.pt", progress.step)
    elif training.init_from:
        load_initial_weights(model, training.init_from, src_vocab, tgt_vocab)
        log.info("starting from the weights of %s", training.init_from)
    trained = DistributedDataParallel(model) if distributed.enabled else model
    # (guide,) adds the guided alignment loss to summed_loss; () leaves its call as it was
    guided = () if training.guided_alignment == 0 else (guided_alignment(
        training.guided_alignment, train_examples, run_dir, distributed),)

    bf16 = use_bf16(training.bf16, device)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16)
    board = Board(run_dir / "tensorboard", enabled=distributed.is_main)
    log.info("model: %s parameters, %s; %d training pairs; device %s%s, %d threads, "
             "%d ranks", f"{count_parameters(model):,}", describe(config.model),
             len(train_examples), device, " (bf16 autocast)" if bf16 else "", threads,
             distributed.world_size)

    dev_scores: dict[int, float] = {}  # step → dev score of this session's validations

    def save(name: str) -> None:
        states = distributed.gather(rng_state())  # every rank's generators, for an exact resume
        if distributed.is_main:
            state = {
                "config": config.to_dict(), "src_vocab": src_vocab.itos, "tgt_vocab": tgt_vocab.itos,
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": schedule.state_dict(), "progress": asdict(progress), "rng": states,
                "averaged_model": None if average is None else average.weights(),
                "averaged_updates": 0 if average is None else average.updates,
                "subword": subword_models,
            }
            save_checkpoint(checkpoints / name, state)
            if name == "last.pt" and training.keep_checkpoints:
                keep_step_checkpoint(checkpoints, state, training.keep_checkpoints,
                                     dev_scores.get(progress.step))

    def run_validation() -> None:
        result = None
        if distributed.is_main:
            scored = model if average is None else average.model
            result = validate(scored, dev, tgt_vocab, detokenizer, config.search,
                              training.batch_tokens, device)
        scores = distributed.broadcast(None if result is None else (result.bleu, result.loss))
        score = scores[0] if training.early_stopping_metric == "bleu" else -scores[1]
        dev_scores[progress.step] = score
        improved = progress.best_score is None or score > progress.best_score
        progress.best_score = score if improved else progress.best_score
        progress.bad_validations = 0 if improved else progress.bad_validations + 1
        schedule.after_validation(improved)
        if result is not None:
            board.scalars(progress.step, "dev", {"loss": result.loss, "perplexity": result.perplexity,
                                                 "bleu": result.bleu, "chrf": result.chrf})
            board.examples(progress.step, [result.source_tokens[i] for i in shown.indices],
                           [result.hypotheses[i] for i in shown.indices],
                           [dev.references[i] for i in shown.indices],
                           [result.hypothesis_tokens[i] for i in shown.indices],
                           [result.attentions[i] for i in shown.indices],
                           [_heads(scored, dev, result, i, device, tgt_vocab) for i in shown.indices])
            shown.log_gold(board, scored, dev, progress.step, device)
            log.info("step %d (%.1f min, %.1f CPU min): dev loss %.3f, ppl %.1f, BLEU %.2f, "
                     "chrF %.2f%s", progress.step, progress.train_seconds / 60,
                     progress.cpu_seconds / 60, result.loss, result.perplexity, result.bleu,
                     result.chrf, " (new best)" if improved else "")
            board.scalars(progress.step, "time", {"minutes": progress.train_seconds / 60,
                                                  "cpu_minutes": progress.cpu_seconds / 60})
        if improved:
            save("best.pt")

    def finished() -> bool:
        return ((training.max_steps is not None and progress.step >= training.max_steps)
                or (training.max_epochs is not None and progress.epoch >= training.max_epochs)
                or time_is_up or progress.bad_validations >= training.patience)

    bar = tqdm(desc="train", unit="step", initial=progress.step, total=training.max_steps,
               disable=not distributed.is_main, dynamic_ncols=True,
               mininterval=0.5 if sys.stderr.isatty() else 60)  # a log file gets a line a minute
    window_tokens, window_start = 0, time.perf_counter()
    last_tick, last_cpu_tick = window_start, time.process_time()
    validated_at = saved_at = progress.step
    interrupted = False
    time_is_up = False
    with StopSignal() as stop:
        trained.train()
        while not finished() and not interrupted:
            batches = make_batches(train_examples, training.batch_tokens, config.seed, progress.epoch)
            for indices in batches[progress.batch_in_epoch:]:
                progress.batch_in_epoch += 1
                local, weight = distributed.shard(indices), 1.0
                if not local:  # fewer sentences than ranks: this rank must still join the
                    local, weight = indices[:1], 0.0  # gradient all-reduce, contributing nothing
                # Every rank knows the global batch, so it can normalise without communicating.
                global_tokens = sum(len(train_examples[i].tgt) + 1 for i in indices)
                batch = word_dropout(collate(train_examples, local), training.src_word_dropout,
                                     training.tgt_word_dropout).to(device)
                schedule.before_step(progress.step + 1)
                with autocast:
                    loss = weight * summed_loss(trained, batch, training.label_smoothing, *guided) / (
                        global_tokens / distributed.world_size)  # DDP averages over ranks
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), training.clip_norm)
                if not (math.isfinite(loss.item()) and math.isfinite(grad_norm.item())):
                    _handle_non_finite(progress, training, loss.item())
                    optimizer.zero_grad(set_to_none=True)
                    continue
                optimizer.step()
                progress.step += 1
                if average is not None:
                    average.update(model, progress.step)
                progress.target_tokens += global_tokens
                window_tokens += global_tokens
                now, cpu_now = time.perf_counter(), time.process_time()
                progress.train_seconds += now - last_tick  # wall clock, validation included
                progress.cpu_seconds += cpu_now - last_cpu_tick
                last_tick, last_cpu_tick = now, cpu_now
                bar.update(1)
                if progress.step % training.log_every == 0:
                    # Each rank's loss is its share's; their mean is the global batch's loss.
                    shown_loss = sum(distributed.gather(loss.item())) / distributed.world_size
                    elapsed = time.perf_counter() - window_start
                    board.scalars(progress.step, "train", {
                        "loss": shown_loss, "perplexity": math.exp(min(shown_loss, 50)),
                        "lr": schedule.lr, "grad_norm": grad_norm.item(),
                        "tokens_per_second": window_tokens / elapsed})
                    bar.set_postfix(loss=f"{shown_loss:.3f}", tok_s=f"{window_tokens / elapsed:.0f}")
                    window_tokens, window_start = 0, time.perf_counter()
                if progress.step % training.validate_every == 0:
                    run_validation()
                    validated_at = progress.step
                    window_tokens, window_start = 0, time.perf_counter()  # tokens/s: training only
                if progress.step % training.checkpoint_every == 0:
                    save("last.pt")
                    saved_at = progress.step
                # A signal reaches the ranks at slightly different times; all stop after one step.
                stopping = distributed.any(stop.received is not None)
                if training.max_minutes is not None:  # rank 0's clock decides for every rank
                    time_is_up = distributed.any(distributed.is_main and progress.train_seconds
                                                 >= 60 * training.max_minutes)
                if stopping or finished():
                    interrupted = stopping
                    break
            else:  # the epoch ran to its end
                progress.epoch += 1
                progress.batch_in_epoch = 0
        if not interrupted and validated_at != progress.step:
            run_validation()
        if progress.step != saved_at:
            save("last.pt")
    bar.close()
    board.close()
    if distributed.is_main:
        atomic_write_json(run_dir / "train_summary.json", {
            "name": config.name, "architecture": config.model.architecture,
            "attention": attention_name(asdict(config.model)),
            "parameters": count_parameters(model), "step": progress.step, "epoch": progress.epoch,
            "train_seconds": round(progress.train_seconds, 1),
            "cpu_seconds": round(progress.cpu_seconds, 3), "threads": threads,
            "best_dev_bleu": progress.best_score if training.early_stopping_metric == "bleu" else None,
            "target_tokens": progress.target_tokens, "skipped_batches": progress.skipped_batches,
            "finished": not interrupted,
        })
    if interrupted and distributed.is_main:
        log.warning("stopped by signal at step %d; checkpoint saved, rerun the same command to resume",
                    progress.step)
    del trained  # DDP holds the process group: let close() free both
    distributed.close()
    return run_dir


def _heads(model, dev: DevSet, result, i: int, device: torch.device, tgt_vocab: Vocab):
    """Every head of the alignment layer for dev example i, for the TensorBoard grid: rows and
    columns as in its (word-level) attention."""
    rows = 0 if result.attentions[i] is None else len(result.attentions[i])
    if not rows:
        return None
    ids = result.hypothesis_ids[i]
    heads = alignment_heads(model, dev.examples[i].src, ids, len(ids) + 1, device)  # (H, T+1, S)
    if heads is not None and dev.subword:  # pieces → whole words, as the attention shown
        pieces = tgt_vocab.decode(ids)
        heads = np.stack([merge_attention(head, pieces, dev.src_tokens[i]) for head in heads])
    return None if heads is None else heads[:, :rows]  # no </s> row when the output had none


def _handle_non_finite(progress: Progress, training, loss: float) -> None:
    """A NaN or infinite loss never reaches the weights or a checkpoint."""
    at = f"step {progress.step + 1} (epoch {progress.epoch}, batch {progress.batch_in_epoch})"
    if training.on_nan == "stop":
        raise NMTError(f"the loss became {loss} at {at}; nothing was saved from this step. "
                       f"Lower training.lr or training.clip_norm, or set training.on_nan=skip")
    progress.skipped_batches += 1
    log.warning("non-finite loss %s at %s: batch skipped (%d so far)", loss, at,
                progress.skipped_batches)
    if progress.skipped_batches > training.max_skipped_batches:
        raise NMTError(f"{progress.skipped_batches} batches had a non-finite loss (more than "
                       f"training.max_skipped_batches); lower training.lr and train again")
