"""What an ensemble costs at decoding time: beam search with 1, 2, 3 ... members.

    python bench/bench_ensemble.py configs/tatoeba.yaml [overrides] [--members 1,2,3]
                                   [--beam 5] [--batch 64] [--limit 500]

Members are random-init models of the config's size (different seeds), each steered to end near
1.15x the source length as a trained model does (bench_decode.py's SteeredLength), so every
count of members decodes outputs of about the same length and the times compare the cost per
step. Sentences are the prepared test split's, already segmented (segmentation and
detokenization do not depend on the member count). "1 (plain)" is the model without the
wrapper; "1" the wrapper around one model: their difference is the wrapper's own overhead.
"""

from __future__ import annotations

import os

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import sys
import time
from dataclasses import replace

import torch

from bench_decode import SteeredLength  # bench/bench_decode.py
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.decoding.translate import decode_ids
from nmt.io import read_lines
from nmt.model import build_model, describe
from nmt.model.ensemble import Ensemble
from nmt.runtime import cpu_model, set_threads


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    lines = read_lines(prepared.tokens("test", "zh"))[: args.limit]
    src_ids = [src_vocab.encode(line.split()) for line in lines]
    # one process in float32: what an ensemble costs against one model, all else equal
    search = replace(config.search, beam_size=args.beam, batch_size=args.batch, n_best=1,
                     workers=1, bf16=False)
    counts = [int(n) for n in args.members.split(",")]
    models = []
    for seed in range(max(counts)):
        torch.manual_seed(config.seed + seed)
        model = build_model(config.model, len(src_vocab), len(tgt_vocab)).eval()
        models.append(SteeredLength(model, 1.15))
    print(f"machine  {os.cpu_count()} CPUs, {cpu_model()}; torch {torch.__version__}, {threads} "
          f"threads; python {sys.version.split()[0]}")
    print(f"decoding {len(src_ids)} test sentences, beam {search.beam_size}, batch "
          f"{search.batch_size}; members: random init, {describe(config.model)}, "
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
    run_cli(main, parser)
