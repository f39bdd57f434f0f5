"""Alignment speed on a user's own corpus: pairs per second of the bidirectional aligner (the
forward and the reverse model, teacher-forced each way, combined) beside eflomal's on the same
pairs.

    python bench/bench_align.py configs/tatoeba.yaml [overrides] [--pairs 25000] [--input pairs.tsv]
    python bench/bench_align.py configs/tatoeba.yaml --checkpoint F.pt --reverse R.pt  # other models
    python bench/bench_align.py configs/tatoeba.yaml --random-init  # models of its size, untrained

The corpus: `--input` (Chinese<TAB>English lines, as scripts/align.py reads them), else the
prepared training split's sentences; the first `--pairs` of it, cycled when it has fewer. The
models: what `make align` aligns with (nmt/align/stage.py): the run's decoding plan's forward
checkpoint(s), or `--checkpoint`, and its reverse model (the plan's channel model, or
`--reverse`). A run without a reverse model has its forward direction timed alone, and says so.
With --random-init, or when the run has no checkpoint at all (said on stderr): random-init
forward and reverse models of the config's size (the cost does not depend on the weights). Any
other error of the run's plan stops the bench with its message. The attention aligner's time is
everything scripts/align.py --weights bidirectional does after loading: segmentation, both
directions' forced decoding (each model's posterior where it is recurrent), the projection
onto the gold's units and the combination (every --method, timed apart); the forward model
alone is timed too (its attention, and a recurrent model's posterior: what the posterior
costs), so the reverse direction's share shows. eflomal learns from
these pairs alone, as it would align a user's corpus: its time is its learning and aligning
(char units, grow-diag-final-and), not counted for the models, whose training is done before.
"""

from __future__ import annotations

import os

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import dataclasses
import itertools
import sys
import time

import torch

from nmt.align.agreement import BIDIRECTIONAL_METHODS, DEFAULT_BIDIRECTIONAL_METHOD
from nmt.align.aligner import AttentionAligner
from nmt.align.bidirectional import TRAIN_REVERSE, BidirectionalAligner
from nmt.align.links import AlignPair, parse_pairs, read_pairs
from nmt.align.statistical import align_with_eflomal
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.config.schema import Config
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.decoding.plan import plan_for
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.model import build_model, describe, has_posterior
from nmt.runtime import cpu_model, pick_device, set_threads
from stand_in import say_stand_in, untrained  # bench/stand_in.py


def corpus(config: Config, path: str | None, count: int) -> list[AlignPair]:
    """The first `count` pairs of `path`, or of the prepared training split; cycled when fewer."""
    if path:
        pairs = [p for p in read_pairs(path) if p.src_units and p.tgt_units]
    else:
        prepared = load_prepared(config)
        zh, en = (read_lines(prepared.text("train", lang)) for lang in ("zh", "en"))
        pairs = parse_pairs([f"{z}\t{e}" for z, e in zip(zh, en, strict=True)], "train split")
    if not pairs:
        raise NMTError(f"{path or 'the training split'}: no pair with two non-empty sides")
    return list(itertools.islice(itertools.cycle(pairs), count))


def random_aligner(config: Config, device: str, batch_size: int) -> BidirectionalAligner:
    """Random-init forward and reverse models of the config's size over its prepared vocabularies."""
    prepared = load_prepared(config)
    zh, en = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    torch.manual_seed(config.seed)
    chosen = pick_device(device)
    forward = build_model(config.model, len(zh), len(en)).to(chosen).eval()
    reverse_config = dataclasses.replace(config.model, direction="reverse")
    reverse = build_model(reverse_config, len(en), len(zh)).to(chosen).eval()
    return BidirectionalAligner(AttentionAligner(forward, config, zh, en, chosen, batch_size), reverse)


def run_aligner(config: Config, args: argparse.Namespace
                ) -> tuple[AttentionAligner, BidirectionalAligner | None, str]:
    """As make align builds them (nmt/align/stage.py): the forward aligner of the run's plan
    (or --checkpoint), and with the plan's channel model (or --reverse) both directions; what
    they are, for the report."""
    plan = plan_for(config, args.overrides, args.checkpoint)
    forward = AttentionAligner.from_checkpoints(list(plan.checkpoints), plan.device,
                                                args.batch or plan.search.batch_size)
    names = ", ".join(map(str, forward.paths))
    if plan.channel is None and not args.reverse:
        return forward, None, f"trained: forward {names} (step {forward.step}); no reverse model"
    both = BidirectionalAligner.for_plan(plan, forward, args.reverse)
    return forward, both, (f"trained: forward {names} (step {forward.step}), reverse "
                           f"{both.reverse_path} (step {both.reverse_step})")


def aligners(config: Config, args: argparse.Namespace
             ) -> tuple[AttentionAligner, BidirectionalAligner | None, str]:
    """The run's (run_aligner), or random-init ones with --random-init or before any training."""
    if args.random_init and (args.checkpoint or args.reverse):
        raise NMTError("--random-init measures untrained models: leave out --checkpoint and --reverse")
    stand_in = not args.random_init and not args.reverse and untrained(config, args.checkpoint)
    if not (args.random_init or stand_in):
        return run_aligner(config, args)
    if stand_in:  # `make bench` before `make train`
        say_stand_in(config, "random-init forward and reverse models of the same size "
                             "(--random-init)")
    both = random_aligner(config, config.training.device, args.batch or config.search.batch_size)
    return both.forward, both, "forward and reverse, random init"


def timed(work):
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def time_both(both: BidirectionalAligner, pairs: list[AlignPair]) -> None:
    """Both directions' soft alignments, then each way of combining them, timed apart."""
    soft, seconds = timed(lambda: both.soft(pairs))
    print(f"both directions  ({both.read['forward']} / {both.read['reverse']}): "
          f"{seconds:7.2f} s, {len(pairs) / seconds:8.1f} pairs/s")
    for method in BIDIRECTIONAL_METHODS:
        _, combining = timed(lambda method=method: [s.links(method) for s in soft])
        total = seconds + combining
        mark = " (default)" if method == DEFAULT_BIDIRECTIONAL_METHOD else ""
        print(f"  + {method:<20}: {combining:6.2f} s to combine; {len(pairs) / total:8.1f} pairs/s "
              f"in all{mark}")


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    pairs = corpus(config, args.input, args.pairs)
    forward, both, weights = aligners(config, args)
    print(f"machine  {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {cpu_model()}; "
          f"torch {torch.__version__}, {threads} threads, device {forward.device}, float32; "
          f"python {sys.version.split()[0]}")
    print(f"models   {weights}; {describe(forward.config.model)}, vocab "
          f"{len(forward.src_vocab)} / {len(forward.tgt_vocab)}, batch {forward.batch_size}")
    source = args.input or "the prepared training split"
    units = sum(len(p.src_units) + len(p.tgt_units) for p in pairs)
    print(f"corpus   {len(pairs)} pairs of {source}, {units / len(pairs):.1f} units a pair")

    (both or forward).soft(pairs[: forward.batch_size])  # warm-up
    reads = ["attention"] + (["posterior"] if has_posterior(forward.model) else [])
    for read in reads:
        _, alone = timed(lambda read=read: forward.soft(pairs, posterior=read == "posterior"))
        print(f"forward alone    ({read}): {alone:7.2f} s, {len(pairs) / alone:8.1f} pairs/s")
    if both is None:
        print(f"both directions  not measured: the run {config.name} has no reverse model; "
              f"{TRAIN_REVERSE}")
    else:
        time_both(both, pairs)
    if args.no_eflomal:
        return
    try:
        _, eflomal_seconds = timed(lambda: align_with_eflomal(pairs, [], [], "char"))
    except NMTError as error:
        print(f"eflomal: {error}")
        return
    print(f"eflomal (char, grow-diag-final-and, learning from these pairs): {eflomal_seconds:7.2f} s, "
          f"{len(pairs) / eflomal_seconds:8.1f} pairs/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--pairs", type=int, default=25000, help="pairs to align (default 25000)")
    parser.add_argument("--input", help="Chinese<TAB>English lines (default: the training split)")
    parser.add_argument("--checkpoint", help="a trained forward model (default: what make align "
                                             "aligns with, the run's decoding plan)")
    parser.add_argument("--reverse", help="its reverse model (default: the plan's channel model: "
                                          "a channel member, or a reverse checkpoint of eval.rerank)")
    parser.add_argument("--random-init", action="store_true",
                        help="random-init forward and reverse models of the config's size")
    parser.add_argument("--batch", type=int, help="pairs a batch (default search.batch_size)")
    parser.add_argument("--no-eflomal", action="store_true", help="time the models only")
    run_cli(main, parser)
