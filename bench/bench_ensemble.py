"""What an ensemble costs at decoding time: beam search with 1, 2, 3 ... members.

    python bench/bench_ensemble.py configs/tatoeba.yaml [overrides] [--members 1,2,3]
                                   [--beam 5] [--batch 64] [--limit 500] [--random-init]

Members are the run's trained models, those its decoding plan translates with (nmt/decoding/
plan.py: its checkpoint, or its members'), each loaded once and used again as often as a count
asks: an ensemble of the same model twice costs what one of two models of that size costs, and
every count decodes the same outputs, so the times compare the cost per step. Its rescoring
models are not timed (bench_decode.py times the plan whole). With --random-init, or when the run
has no checkpoint at all (said on stderr), members are random-init models of the config's size
(different seeds), each steered to end near 1.15x the source length as a trained model does
(stand_in.py's SteeredLength). Sentences are the prepared test split's, already segmented
(segmentation and detokenization do not depend on the member count). "1 (plain)" is the model
without the wrapper; "1" the wrapper around one model: their difference is the wrapper's own
overhead. Any error of the run's plan stops the bench with its message.
"""

from __future__ import annotations

import os

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import sys
import time
from dataclasses import dataclass, replace

import torch

from nmt.checkpoints.choose import load_chosen
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.config.schema import SearchConfig
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.decoding.plan import plan_for
from nmt.decoding.translate import decode_ids
from nmt.io import read_lines
from nmt.model import build_model, describe
from nmt.model.ensemble import Ensemble
from nmt.runtime import cpu_model, set_threads
from stand_in import SteeredLength, say_stand_in, untrained  # bench/stand_in.py


@dataclass
class Members:
    models: list  # the largest count's members, in order: the first n make an ensemble of n
    vocabularies: tuple[Vocab, Vocab]  # (source, target)
    search: SearchConfig  # the plan's (tuned) search, or the config's
    which: str  # what they are, for the report


def trained_members(config, args) -> Members:
    """The models the run's plan translates with, each loaded once on the CPU and used again
    up to the largest count, with the plan's search."""
    plan = plan_for(config, args.overrides)
    loaded = [load_chosen([path], "cpu") for path in plan.checkpoints]
    count = max(int(n) for n in args.members.split(","))
    models = [loaded[k % len(loaded)].model for k in range(count)]
    names = ", ".join(map(str, plan.checkpoints))
    return Members(models, (loaded[0].src_vocab, loaded[0].tgt_vocab), plan.search,
                   f"trained, {names}, each used again as often as a count asks")


def random_members(config, args) -> Members:
    """Random-init models of the config's size (seed, seed + 1, ...), steered to realistic lengths."""
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    models = []
    for seed in range(max(int(n) for n in args.members.split(","))):
        torch.manual_seed(config.seed + seed)
        model = build_model(config.model, len(src_vocab), len(tgt_vocab)).eval()
        models.append(SteeredLength(model, 1.15))
    return Members(models, (src_vocab, tgt_vocab), config.search,
                   "random init, steered to ~1.15x the source length")


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    if not args.random_init and untrained(config):  # `make bench` before `make train`
        say_stand_in(config, "random-init members of the same size (--random-init)")
        args.random_init = True
    members = (random_members if args.random_init else trained_members)(config, args)
    src_vocab, tgt_vocab = members.vocabularies
    lines = read_lines(load_prepared(config).tokens("test", "zh"))[: args.limit]
    src_ids = [src_vocab.encode(line.split()) for line in lines]
    # one process in float32: what an ensemble costs against one model, all else equal
    search = replace(members.search, beam_size=args.beam, batch_size=args.batch, n_best=1,
                     workers=1, bf16=False)
    counts = [int(n) for n in args.members.split(",")]
    models = members.models
    print(f"machine  {os.cpu_count()} CPUs, {cpu_model()}; torch {torch.__version__}, {threads} "
          f"threads; python {sys.version.split()[0]}")
    print(f"decoding {len(src_ids)} test sentences, beam {search.beam_size}, batch "
          f"{search.batch_size}; members: {members.which}; {describe(models[0].config)}, "
          f"vocab {len(src_vocab)} / {len(tgt_vocab)}")
    base = None
    for label, model in [("1 (plain)", models[0])] + [(str(n), Ensemble(models[:n])) for n in counts]:
        decode_ids(model, src_ids[: search.batch_size], search, "cpu")  # warm-up
        start = time.perf_counter()
        found = decode_ids(model, src_ids, search, "cpu")
        seconds = time.perf_counter() - start
        steps = sum(len(h[0].tokens) + h[0].ended for h in found)
        base = base or seconds
        print(f"members {label:>9}: {seconds:6.2f} s, {len(src_ids) / seconds:6.1f} sentences/s, "
              f"{steps / seconds:7.0f} tokens/s, {seconds / base:4.2f}x the plain model's time")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--members", default="1,2,3", help="member counts, comma-separated")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--limit", type=int, default=500, help="test sentences to decode")
    parser.add_argument("--random-init", action="store_true",
                        help="random-init members of the config's size, not the run's models")
    run_cli(main, parser)
