"""Alignment speed on a user's own corpus: pairs per second of the bidirectional aligner (the
forward and the reverse model, teacher-forced each way, combined) beside eflomal's on the same
pairs.

    python bench/bench_align.py configs/tatoeba.yaml [overrides] [--pairs 25000] [--input pairs.tsv]
    python bench/bench_align.py configs/tatoeba.yaml --checkpoint F.pt --reverse R.pt  # trained models

The corpus: `--input` (Chinese<TAB>English lines, as scripts/align.py reads them), else the
prepared training split's sentences; the first `--pairs` of it, cycled when it has fewer. The
models: random-init ones of the config's size, a forward and a reverse one, by default (the cost
does not depend on the weights), or the trained `--checkpoint` with its reverse model
(`--reverse`, else the first reverse checkpoint in eval.rerank). The attention aligner's time is
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
from nmt.align.bidirectional import BidirectionalAligner
from nmt.align.links import AlignPair, parse_pairs, read_pairs
from nmt.align.statistical import align_with_eflomal
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.config.schema import Config
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.model import build_model, describe
from nmt.runtime import cpu_model, pick_device, set_threads


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


def trained_aligner(config: Config, checkpoint: str, reverse: str | None, device: str,
                    batch_size: int) -> BidirectionalAligner:
    forward = AttentionAligner.from_checkpoint(checkpoint, device, batch_size)
    return BidirectionalAligner.for_run(config, forward, reverse)


def timed(work):
    start = time.perf_counter()
    result = work()
    return result, time.perf_counter() - start


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    pairs = corpus(config, args.input, args.pairs)
    batch = args.batch or config.search.batch_size
    device = config.training.device
    aligner = (trained_aligner(config, args.checkpoint, args.reverse, device, batch) if args.checkpoint
               else random_aligner(config, device, batch))
    print(f"machine  {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {cpu_model()}; "
          f"torch {torch.__version__}, {threads} threads, device {aligner.forward.device}, float32; "
          f"python {sys.version.split()[0]}")
    weights = f"trained: {args.checkpoint}" if args.checkpoint else "random init"
    print(f"models   forward and reverse, {weights}, {describe(config.model)}, vocab "
          f"{len(aligner.forward.src_vocab)} / {len(aligner.forward.tgt_vocab)}, batch {batch}")
    source = args.input or "the prepared training split"
    units = sum(len(p.src_units) + len(p.tgt_units) for p in pairs)
    print(f"corpus   {len(pairs)} pairs of {source}, {units / len(pairs):.1f} units a pair")

    aligner.soft(pairs[:batch])  # warm-up
    for read in dict.fromkeys(("attention", aligner.read["forward"])):  # a recurrent model: both
        _, alone = timed(lambda read=read: aligner.forward.soft(pairs, posterior=read == "posterior"))
        print(f"forward alone    ({read}): {alone:7.2f} s, {len(pairs) / alone:8.1f} pairs/s")
    soft, seconds = timed(lambda: aligner.soft(pairs))
    print(f"both directions  ({aligner.read['forward']} / {aligner.read['reverse']}): "
          f"{seconds:7.2f} s, {len(pairs) / seconds:8.1f} pairs/s")
    for method in BIDIRECTIONAL_METHODS:
        _, combining = timed(lambda method=method: [s.links(method) for s in soft])
        total = seconds + combining
        mark = " (default)" if method == DEFAULT_BIDIRECTIONAL_METHOD else ""
        print(f"  + {method:<20}: {combining:6.2f} s to combine; {len(pairs) / total:8.1f} pairs/s "
              f"in all{mark}")
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
    parser.add_argument("--checkpoint", help="a trained forward model (default: random init)")
    parser.add_argument("--reverse", help="with --checkpoint: its reverse model (default: the first "
                                          "reverse checkpoint in eval.rerank)")
    parser.add_argument("--batch", type=int, help="pairs a batch (default search.batch_size)")
    parser.add_argument("--no-eflomal", action="store_true", help="time the models only")
    run_cli(main, parser)
