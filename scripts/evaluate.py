"""Score a trained experiment on its test split: BLEU and chrF with sacrebleu signatures.

    python scripts/evaluate.py configs/tatoeba.yaml [search.beam_size=10 eval.split=dev ...]
    python scripts/evaluate.py configs/tatoeba.yaml --checkpoint runs/tatoeba/checkpoints/last.pt

Writes runs/<name>/results.json and runs/<name>/hypotheses.<split>.en; logs eval/bleu and
eval/chrf to runs/<name>/tensorboard/.
"""

from nmt.openmp import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse

from nmt.cli import config_arguments, run_cli
from nmt.config import load_config
from nmt.evaluate import evaluate, format_results
from nmt.runtime import set_threads


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    results = evaluate(config, args.checkpoint)
    print(format_results(results))
    print(f"results: {config.run_dir / 'results.json'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--checkpoint", help="a checkpoint file (default: eval.checkpoint of the run)")
    run_cli(main, parser)
