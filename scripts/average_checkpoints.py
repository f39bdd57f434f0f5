"""Average the weights of the last or best N checkpoints of a run into one checkpoint.

    python scripts/average_checkpoints.py configs/tatoeba.yaml --last 5
    python scripts/average_checkpoints.py configs/tatoeba.yaml --best 5 --output avg.pt
    python scripts/evaluate.py configs/tatoeba.yaml --checkpoint runs/tatoeba/checkpoints/average_last5.pt

Needs a run trained with `training.keep_checkpoints: N` (or more), which keeps
runs/<name>/checkpoints/step_NNNNNN.pt. Writes runs/<name>/checkpoints/average_last5.pt (or
average_best5.pt, or --output), which translate and evaluate load like best.pt; appends the
command to runs/<name>/commands.txt. `make eval ARGS="eval.average=last:5"` does both steps.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import shlex
import sys

from nmt.checkpoints.averaging import write_average
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.training.run_dir import record_command


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    how, count = ("last", args.last) if args.last is not None else ("best", args.best)
    output = write_average(config.run_dir, how, count, args.output)
    record_command(config.run_dir, shlex.join(["python", *sys.argv]))
    print(f"averaged the {how} {count} checkpoints of {config.run_dir}: {output}")


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: give a number of checkpoints >= 1")
    return value


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "average")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--last", type=positive_int, metavar="N", help="the N newest step checkpoints")
    which.add_argument("--best", type=positive_int, metavar="N",
                       help="the N step checkpoints with the best dev score")
    parser.add_argument("--output", help="where to write it (default: "
                                         "runs/<name>/checkpoints/average_<last|best>N.pt)")
    run_cli(main, parser)
