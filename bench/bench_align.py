"""What the posterior alignment costs: forced decoding of the test split with the attention as
the alignment, and with the posterior (align.py --weights posterior).

    python bench/bench_align.py configs/tatoeba.yaml [overrides] [--batch 64] [--limit 1500]

The model is a random-init one of the config's size (the cost does not depend on the weights);
pairs are the prepared test split's, already in the model's units, so the times are the model's
own (segmentation and the projection onto the gold units do not depend on the weights read).
The posterior reruns the readout and the output layer once per source token at every step: its
cost grows with the source length times the target vocabulary.
"""

from __future__ import annotations

import os

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import sys
import time

import torch

from nmt.align.forced import forced_attention
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.io import read_lines
from nmt.model import build_model
from nmt.runtime import cpu_model, set_threads


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    src_ids, tgt_ids = ([vocab.encode(line.split()) for line in read_lines(prepared.tokens("test", lang))][
        : args.limit] for vocab, lang in ((src_vocab, "zh"), (tgt_vocab, "en")))
    torch.manual_seed(config.seed)
    model = build_model(config.model, len(src_vocab), len(tgt_vocab)).eval()
    print(f"machine  {os.cpu_count()} CPUs, {cpu_model()}; torch {torch.__version__}, {threads} "
          f"threads; python {sys.version.split()[0]}")
    tokens = sum(len(t) for t in tgt_ids)
    print(f"aligning {len(src_ids)} test pairs ({tokens} target tokens, "
          f"{sum(len(s) for s in src_ids) / len(src_ids):.1f} source tokens a pair), batch "
          f"{args.batch}; random init, {config.model.attention} attention, vocab "
          f"{len(src_vocab)} / {len(tgt_vocab)}")
    base = None
    for posterior in (False, True):
        forced_attention(model, src_ids[: args.batch], tgt_ids[: args.batch], args.batch,
                         "cpu", posterior=posterior)  # warm-up
        start = time.perf_counter()
        forced_attention(model, src_ids, tgt_ids, args.batch, "cpu", posterior=posterior)
        seconds = time.perf_counter() - start
        base = base or seconds
        print(f"{'posterior' if posterior else 'attention':>9}: {seconds:6.2f} s, "
              f"{len(src_ids) / seconds:7.1f} pairs/s, {tokens / seconds:7.0f} target tokens/s, "
              f"{seconds / base:4.1f}x the attention's time")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--batch", type=int, default=64, help="pairs a batch (default 64)")
    parser.add_argument("--limit", type=int, default=1500, help="the first N test pairs")
    run_cli(main, parser)
