"""Beam-search decoding speed on the prepared test split: sentences/s and target tokens/s.

    python bench/bench_decode.py configs/tatoeba.yaml [overrides] [--checkpoint PATH]
                                 [--beam 5] [--batch 64] [--random-init] [--repeat 1]
    python bench/bench_decode.py configs/tatoeba.yaml --also configs/transformer.yaml  # both

For scale: Joey NMT 2.3 decodes this corpus's 1,503 test sentences with beam 5, batch 64, in
about 42 s on a 2-core CPU: ~36 sentences/s. The target here is at least 3x that.

The model is what `make eval` decodes (the run's decoding plan, nmt/decoding/plan.py: the
members' ensemble and the rescoring models); `--checkpoint PATH` measures that file alone.
Times three parts separately: segmentation + vocabulary lookup, the search itself, and
detokenization. `--random-init` measures a model of the config's size with fresh weights, as the
bench does by itself (saying so) when the run has no checkpoint at all; any other error of the
run's plan (a damaged tuned file, a missing rescoring model) stops it with its message. A random
model rarely produces </s>, so its outputs run to the length limit (2x the source + 10) and its
sentences/s are pessimistic; tokens/s compare better. `--steer-length 1.15` makes such a model
end near 1.15x the source length, about the ratio of references to sources in this corpus's
tokens: the cost of a trained model, roughly.
"""

from __future__ import annotations

import os

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import statistics
import sys
import time
from dataclasses import replace

import torch

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.decoding.plan import plan_for
from nmt.decoding.translator import Translator
from nmt.decoding.workers import worker_count
from nmt.io import read_lines
from nmt.model import build_model, count_parameters, describe
from nmt.runtime import cpu_model, set_threads
from stand_in import SteeredLength, say_stand_in, untrained  # bench/stand_in.py

JOEY_SENTENCES_PER_SECOND = 1503 / 42  # beam 5, batch 64, 2-core CPU


def make_translator(args, config) -> tuple[Translator, str]:
    """What make eval decodes with (nmt/decoding/plan.py), or --checkpoint alone; a random model
    of the config's size with --random-init, or when the run has no checkpoint at all (said on
    stderr). Any other error of the plan stops the bench: its figures would not be the run's."""
    if not args.random_init and untrained(config, args.checkpoint):  # `make bench` before `make train`
        say_stand_in(config, "a random-init model of the same size, steered to realistic output "
                             "lengths (--random-init --steer-length 1.15)")
        args = argparse.Namespace(**{**vars(args), "random_init": True,
                                     "steer_length": args.steer_length or 1.15})
    if not args.random_init:
        plan = plan_for(config, args.overrides, args.checkpoint)
        plan = plan.with_search(beam_size=args.beam, batch_size=args.batch, n_best=1)
        rescored = [str(model.path) for model in plan.rescoring]
        return Translator.from_plan(plan, keep_attention=False), (
            ", ".join(map(str, plan.checkpoints))
            + (f" rescored by {', '.join(rescored)}" if rescored else ""))
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    torch.manual_seed(config.seed)
    model = build_model(config.model, len(src_vocab), len(tgt_vocab)).eval()
    label = "random init"
    if args.steer_length:
        model = SteeredLength(model, args.steer_length)
        label += f", </s> steered to ~{args.steer_length:g}x the source length"
    search = replace(config.search, beam_size=args.beam, batch_size=args.batch, n_best=1)
    return Translator.from_model(model, config, (src_vocab, tgt_vocab), search), label


def model_summary(translator: Translator) -> str:
    """Its size and shape; an engine's export (no PyTorch model): the engine that searches."""
    if translator.plan.engine is not None:
        return f"{translator.answered_by} ({translator.plan.engine}), {describe(translator.config.model)}"
    model = translator.model
    return f"{count_parameters(model) / 1e6:.1f}M parameters, {describe(model.config)}"


def main(args: argparse.Namespace) -> None:
    # Overrides written after --also land in it: they are the ones with a '='.
    args.overrides += [a for a in args.also if "=" in a]
    others = [a for a in args.also if "=" not in a]
    measure(args)
    for path in others:  # each with its own run's checkpoint, or a random-init stand-in
        print()
        measure(argparse.Namespace(**{**vars(args), "config": path, "checkpoint": None}))


def measure(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    translator, source = make_translator(args, config)
    lines = read_lines(load_prepared(config).text("test", "zh"))[: args.limit]

    translator.segmenter.warm_up()  # load jieba's dictionary and compile Moses' regexes first
    translator.detokenizer.detokenize(["warm", "up"])
    start = time.perf_counter()
    src_tokens = [translator.segment(line) for line in lines]
    src_ids = [translator.src_vocab.encode(tokens) for tokens in src_tokens]
    segment_seconds = time.perf_counter() - start

    search = translator.search
    translator.decode(src_ids[: search.batch_size])  # warm-up
    runs = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        found = translator.decode(src_ids)  # the search and the rescoring, as make eval decodes
        runs.append(time.perf_counter() - start)
    search_seconds = statistics.median(runs)

    start = time.perf_counter()
    for hyps in found:
        translator.detokenizer.detokenize(translator.tgt_vocab.decode(hyps[0].tokens))
    detok_seconds = time.perf_counter() - start

    best = [hyps[0] for hyps in found]
    out_tokens = sum(len(h.tokens) + h.ended for h in best)  # decoding steps, </s> included
    ended = sum(h.ended for h in best)
    total = segment_seconds + search_seconds + detok_seconds
    n = len(lines)
    print(f"machine     {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable), {cpu_model()}; "
          f"torch {torch.__version__}, {threads} threads "
          f"(OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}), device {translator.device}; "
          f"python {sys.version.split()[0]}")
    print(f"model       {source}: {model_summary(translator)}, vocab {len(translator.src_vocab)} / "
          f"{len(translator.tgt_vocab)}")
    workers = worker_count(search.workers, -(-n // search.batch_size), translator.device)
    print(f"decoding    {n} test sentences, beam {search.beam_size}, batch {search.batch_size}, "
          f"{workers} worker process(es), "
          f"alpha {search.length_penalty}; {ended} ended with </s>, "
          f"{out_tokens / n:.1f} output steps per sentence on average")
    print(f"search      {search_seconds:.2f} s: {n / search_seconds:.1f} sentences/s, "
          f"{out_tokens / search_seconds:.0f} target tokens/s (median of {len(runs)})")
    print(f"end to end  {total:.2f} s: {n / total:.1f} sentences/s "
          f"(segmentation {segment_seconds:.2f} s, detokenization {detok_seconds:.2f} s)")
    speedup = n / total / JOEY_SENTENCES_PER_SECOND
    print(f"vs Joey NMT {JOEY_SENTENCES_PER_SECOND:.0f} sentences/s: {speedup:.1f}x "
          f"end to end (target: 3x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--checkpoint", help="a checkpoint file alone (default: what make eval "
                                             "decodes: the run's plan, rescoring included)")
    parser.add_argument("--also", nargs="+", default=[], metavar="CONFIG",
                        help="more experiment YAMLs measured in the same run with the same "
                             "overrides and options (each with its own run's checkpoint), e.g. "
                             "configs/transformer.yaml beside configs/tatoeba.yaml")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--limit", type=int, default=None, help="only the first N test sentences")
    parser.add_argument("--repeat", type=int, default=1, help="time the search N times")
    parser.add_argument("--random-init", action="store_true",
                        help="a fresh model of the config's size, when there is no checkpoint yet")
    parser.add_argument("--steer-length", type=float, default=None, metavar="RATIO",
                        help="with --random-init: make </s> likely near RATIO x the source "
                             "length (1.15 for this test set), so outputs are realistically long")
    run_cli(main, parser)
