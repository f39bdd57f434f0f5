"""Score a trained experiment on its test split: BLEU and chrF with sacrebleu signatures.

    python scripts/evaluate.py configs/tatoeba.yaml [search.beam_size=10 eval.split=dev ...]
    python scripts/evaluate.py configs/tatoeba.yaml --checkpoint runs/tatoeba/checkpoints/last.pt
    python scripts/evaluate.py configs/tatoeba.yaml eval.average=last:5     # checkpoint averaging
    python scripts/evaluate.py configs/tatoeba.yaml --checkpoint runs/a/checkpoints/best.pt \
        --checkpoint runs/b/checkpoints/best.pt                             # an ensemble
    python scripts/evaluate.py configs/tatoeba.yaml eval.rerank=[runs/r2l/checkpoints/best.pt] \
        eval.rerank_weights=[0.5]                           # rerank the n-best with an R2L model
    python scripts/evaluate.py configs/tatoeba.yaml training.channel_members=0  # without the channel model

Writes runs/<name>/results.json and runs/<name>/hypotheses.<split>.en (results.<label>.json and
hypotheses.<label>.<split>.en for an ensemble, an average, another checkpoint or eval.rerank);
logs eval/bleu and eval/chrf to runs/<name>/tensorboard/; appends the command to
runs/<name>/commands.txt.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import shlex
import sys

from nmt.checkpoints.choose import split_checkpoint_arguments
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.decoding.plan import plan_for
from nmt.evaluation.evaluate import evaluate, format_results, results_path, split_label
from nmt.runtime import set_threads
from nmt.training.run_dir import record_command


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    plan = plan_for(config, args.overrides, split_checkpoint_arguments(args.checkpoint) or None,
                    args.label)
    results = evaluate(plan)
    record_command(config.run_dir, shlex.join(["python", *sys.argv]))
    print(format_results(results))
    print(f"results: {results_path(config.run_dir, split_label(results['label'], results['split']))}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "evaluate")
    parser.add_argument("--checkpoint", action="append",
                        help="a checkpoint file (default: eval.ensemble, eval.average, else the "
                             "run's eval.checkpoint); repeat it or separate paths by commas to "
                             "decode with an ensemble")
    parser.add_argument("--label", help="write results.<label>.json (default: results.json for the "
                                        "run's best/last.pt, 'ensemble', or the checkpoint's name; "
                                        "'rerank' with eval.rerank)")
    run_cli(main, parser)
