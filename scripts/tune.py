"""Choose the search settings on the dev split with the run's final models (make tune).

    python scripts/tune.py configs/tatoeba.yaml [eval.rerank=[runs/tatoeba_reverse/checkpoints/best.pt] ...]

Tries search.stop, length_penalty, coverage_penalty and word_reward one at a time (and
eval.rerank_weights and eval.channel_weight, when the run reranks), prints each setting's dev
BLEU and length ratio, and writes the best to runs/<name>/search.tuned.yaml, which every way
into decoding then uses (nmt/decoding/plan.py; a key given on the command line still wins).
The test split is never read.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import shlex
import sys

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.config.tuned import tuned_path
from nmt.evaluation.tune import Trial, tune
from nmt.runtime import set_threads
from nmt.training.run_dir import record_command


def show(trial: Trial) -> None:
    print(f"dev BLEU {trial.bleu:6.2f}  ratio {trial.ratio:.3f}  {trial.setting}", flush=True)


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    tuned = tune(config, show)
    record_command(config.run_dir, shlex.join(["python", *sys.argv]))
    chosen = " ".join(f"search.{k}={v}" for k, v in tuned["search"].items())
    weights = " ".join(f"eval.{key}={value}" for key, value in tuned.get("eval", {}).items())
    print(f"chosen on dev: {chosen}" + (f" {weights}" if weights else "")
          + f" (dev BLEU {tuned['dev_bleu']:.2f}, ratio {tuned['dev_length_ratio']:.3f})")
    print(f"written: {tuned_path(config)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "tune")
    run_cli(main, parser)
