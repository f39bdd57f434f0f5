"""Prepare the data of an experiment: clean, split, segment and index the corpus.

    python scripts/prepare.py configs/tatoeba.yaml [data.workers=1 ...]

Writes <data.prepared_dir>/<data hash>/; does nothing when that folder is complete already.
"""

import argparse

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import prepare, summary


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    prepared = prepare(config)
    print(f"prepared data: {prepared.dir}")
    print(summary(prepared.manifest))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "prepare")
    run_cli(main, parser)
