"""Train an experiment, or resume it: rerunning the same command continues from the last checkpoint.

    python scripts/train.py configs/tatoeba.yaml [training.max_steps=200 ...]
    torchrun --nproc-per-node 2 scripts/train.py configs/tatoeba.yaml     # several processes

Prepares the data first if needed. Writes runs/<name>/: config.yaml, checkpoints/{best,last}.pt,
tensorboard/, train_summary.json. Ctrl-C or SIGTERM saves a checkpoint and exits cleanly.
"""

import argparse
import logging
import os
import shlex
import sys

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.training.loop import train


def main(args: argparse.Namespace) -> None:
    command = shlex.join(["python", *sys.argv])
    if "WORLD_SIZE" in os.environ:  # started by torchrun
        command = f"torchrun --nproc-per-node {os.environ.get('LOCAL_WORLD_SIZE', '?')} {command}"
    config = load_config(args.config, args.overrides)
    run_dir = train(config, command=command)
    if os.environ.get("RANK", "0") == "0":  # under torchrun, once for the whole job
        # training.members > 1: the members' curves side by side (runs/<name>/member<k>/)
        logdir = run_dir if config.training.trained_models > 1 else run_dir / "tensorboard"
        print(f"run: {run_dir}  (tensorboard --logdir {logdir})")
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # Every file is written and the process group destroyed. Skip the interpreter's teardown:
        # there torch's gloo threads once aborted a finished rank in CI ("terminate called
        # without an active exception"), and torchrun reported the whole run as failed.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "train")
    run_cli(main, parser)
