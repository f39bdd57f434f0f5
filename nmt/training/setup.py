"""Setting a run up: the processes, the prepared data on every machine, the distilled targets
(training.distill_from), the run folder, and the training and dev data in memory."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import torch

from nmt.config.schema import Config, TrainingConfig
from nmt.data.batching import Example, in_target_order, load_examples
from nmt.data.prepare import PreparedData, prepare
from nmt.data.subword import load_models
from nmt.data.token_arrays import PairArrays, TokenArrays
from nmt.data.tokenize import EnglishTokenizer, make_tokenizers
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.runtime import keep_freed_memory, pick_device, set_threads
from nmt.training.distill import distilled_targets
from nmt.training.distill_run import run_distilled_targets
from nmt.training.distributed import Distributed, device_for
from nmt.training.examples import DevExamples
from nmt.training.run_dir import claim_run_dir, record_command
from nmt.training.validate import CHINESE, ChineseJoiner, DevSet


@dataclass
class TrainingData:
    """What a run reads: vocabularies, training pairs, the dev set and its shown examples."""

    src_vocab: Vocab
    tgt_vocab: Vocab
    train_examples: PairArrays | list[Example]  # the prepared arrays; a list with distilled targets
    dev: DevSet
    shown: DevExamples  # the dev sentences TensorBoard shows at every validation
    subword_models: dict[str, bytes] | None  # sentencepiece models: they travel in checkpoints
    detokenizer: EnglishTokenizer | ChineseJoiner  # the target language's


def start_processes(training: TrainingConfig) -> tuple[Distributed, torch.device, int]:
    """This process's rank (one, or one of torchrun's, in the group of the member it trains with
    training.members > 1), its device and its CPU threads."""
    distributed = Distributed.from_env(pick_device(training.device).type, training.trained_models)
    if not distributed.is_main:  # one console: each member's other ranks speak up only to warn
        logging.getLogger().setLevel(logging.WARNING)
    device = device_for(training.device, distributed)
    keep_freed_memory()
    threads = set_threads(training.threads)
    return distributed, device, threads


def prepare_everywhere(config: Config, distributed: Distributed) -> PreparedData:
    """Global rank 0 prepares first, then the first rank of every other machine (whose disk may
    not be shared: a cache hit where it is), then the rest find the data ready. World-wide, not
    per member: every member reads the same prepared data."""
    return distributed.in_turn(lambda: prepare(config))


def distill_everywhere(config: Config, prepared: PreparedData, distributed: Distributed,
                       device: torch.device) -> Path | None:
    """The teachers' translations of the training sources (distill.teacher, a run, or
    training.distill_from, checkpoints), else None.

    As prepare_everywhere: global rank 0 translates (on its device) while the others wait at
    the barrier, then the first rank of every other machine (a cache hit where the disk is
    shared, else it translates too), then the rest find the file cached. World-wide, not per
    member: the translations are cached beside the prepared data and depend on neither the seed
    nor the run, so the members of training.members share one translation. The wait is bounded
    by the process group's timeout (30 minutes): ample for Tatoeba, not for a corpus of
    millions."""
    if config.distill.teacher:
        return distributed.in_turn(lambda: run_distilled_targets(config, prepared, device))
    if not config.training.distill_from:
        return None
    return distributed.in_turn(lambda: distilled_targets(config, prepared, device))


def open_run_dir(config: Config, distributed: Distributed, command: str | None) -> Path:
    """runs/<name>/ (or a member's runs/<name>/member<k>/), claimed by the member's rank 0
    (never silently another experiment's), with the command that started the run appended to
    its commands.txt; the member's other ranks wait for it."""
    run_dir = claim_run_dir(config) if distributed.is_main else config.run_dir
    if command is not None and distributed.is_main:
        record_command(run_dir, command)
    distributed.barrier()
    return run_dir


def load_training_data(config: Config, prepared: PreparedData,
                       train_targets: Path | None = None) -> TrainingData:
    """`train_targets`: the training targets' token file when it is not the prepared references
    (distill_everywhere's, with training.distill_from). The dev set always keeps its references."""
    training, order = config.training, config.model.target_order
    reverse = config.model.direction == "reverse"
    # The source and target languages: a reverse model reads the same files the other way round.
    src, tgt = ("en", "zh") if reverse else ("zh", "en")
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab(src)), Vocab.load(prepared.vocab(tgt))
    train_examples: PairArrays | list[Example]
    if train_targets is None:  # memory-mapped: shared by every process of the machine
        train_examples = PairArrays(TokenArrays.open(prepared.dir / f"train.{src}"),
                                    TokenArrays.open(prepared.dir / f"train.{tgt}"),
                                    training.max_length, order, reverse)
    else:  # the teacher's lines, after the references with distill.with_gold
        targets = [train_targets]
        if config.distill.teacher and config.distill.with_gold:
            targets.insert(0, prepared.tokens("train", "en"))
        train_examples = in_target_order([example for path in targets for example in load_examples(
            prepared.tokens("train", "zh"), path, src_vocab, tgt_vocab,
            max_length=training.max_length)], order)
    if not len(train_examples):
        raise NMTError(f"{prepared.dir}: no training pairs within training.max_length")
    dev = DevSet(
        load_examples(prepared.tokens("dev", src), prepared.tokens("dev", tgt), src_vocab, tgt_vocab),
        [line.split() for line in read_lines(prepared.tokens("dev", src))],
        read_lines(prepared.text("dev", tgt)),
        subword=config.data.subword != "none",
        target_language=tgt,
    )
    # A right_to_left model learns every target reversed, its dev loss too; decoding
    # (nmt/decoding/translate.py) turns its output back, so dev BLEU reads left to right.
    dev.examples = in_target_order(dev.examples, order)
    shown = DevExamples.choose(dev.src_tokens, read_lines(prepared.text("dev", src)),
                               [line.split() for line in read_lines(prepared.tokens("dev", tgt))],
                               training.examples, None if reverse else training.examples_gold)
    _, detokenizer = make_tokenizers(config.data)
    return TrainingData(src_vocab, tgt_vocab, train_examples, dev, shown,
                        load_models(prepared.dir, config.data),
                        CHINESE if reverse else detokenizer)
