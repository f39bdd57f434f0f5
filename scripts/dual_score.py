"""Score every training pair of a run by dual conditional cross-entropy (Junczys-Dowmunt, 2018):
its translating models read each pair forward, its channel model backward.

    python scripts/dual_score.py configs/tatoeba.yaml [key=value ...] [--kinds corpus.kinds]

Needs a trained run with a channel model (the default's `training.channel_members: 1`). Writes
runs/<name>/dual_scores.tsv (corpus line, H_f, H_r, score; lower is better), which a second
prepare reads to drop the worst share: `data.clean.dual_scores=runs/<name>/dual_scores.tsv
data.clean.dual_drop=0.05`. With --kinds (bench/bench_clean.py's file of each noised corpus
line's kind), prints the share of each kind among the worst 5%, 10% and 20%.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import shlex
import sys
from collections import Counter

from nmt.checkpoints.choose import load_beside, load_chosen
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import load_prepared
from nmt.data.vocab import Vocab
from nmt.decoding.dual_score import dual_scores
from nmt.decoding.plan import plan_for
from nmt.errors import NMTError
from nmt.io import atomic_write_lines, read_lines
from nmt.runtime import set_threads
from nmt.training.run_dir import record_command


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    plan = plan_for(config)
    if plan.channel is None:
        raise NMTError(f"{config.name} has no channel (reverse) model to read the pairs backward: "
                       f"train it with training.channel_members: 1")
    forward = load_chosen(plan.checkpoints, plan.device, config.model.architecture)
    first = (plan.checkpoints[0], forward.config, forward.src_vocab, forward.tgt_vocab)
    reverse, reverse_config, _ = load_beside(plan.channel.path, first, "the channel model")
    prepared = load_prepared(config)
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    src = [src_vocab.encode(line.split()) for line in read_lines(prepared.tokens("train", "zh"))]
    tgt = [tgt_vocab.encode(line.split()) for line in read_lines(prepared.tokens("train", "en"))]
    lines = read_lines(prepared.source_lines("train"))
    scores = dual_scores(forward.model, reverse.to(forward.device).eval(),
                         reverse_config.model.target_order, src, tgt, forward.device,
                         plan.search.batch_size)  # (N, 3)
    path = config.run_dir / "dual_scores.tsv"
    atomic_write_lines(path, ["line\th_forward\th_reverse\tscore"] + [
        f"{line}\t{h_f:.4f}\t{h_r:.4f}\t{score:.4f}" for line, (h_f, h_r, score) in zip(lines, scores)])
    record_command(config.run_dir, shlex.join(["python", *sys.argv]))
    print(f"{len(lines)} training pairs scored: {path}")
    if args.kinds:
        show_kinds(read_lines(args.kinds), lines, scores[:, 2])


def show_kinds(kinds: list[str], lines: list[str], scores) -> None:
    """The share of each kind of noise among the worst-scored pairs (corpus lines from 1)."""
    kind_of = [kinds[int(line) - 1] for line in lines]
    order = sorted(range(len(lines)), key=lambda i: -scores[i])
    totals = Counter(kind_of)
    for share in (0.05, 0.10, 0.20):
        worst = Counter(kind_of[i] for i in order[: int(share * len(order))])
        print(f"worst {100 * share:.0f}%: " + ", ".join(
            f"{kind} {100 * worst[kind] / totals[kind]:.0f}% of its {totals[kind]}"
            for kind in sorted(totals)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "dual_score")
    parser.add_argument("--kinds", help="the noised corpus's kinds (bench/bench_clean.py --out)")
    run_cli(main, parser)
