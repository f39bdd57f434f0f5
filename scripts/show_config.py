"""Print an experiment's resolved config: every key, defaults filled in, overrides applied.

    python scripts/show_config.py configs/tatoeba.yaml [training.lr=3e-4 ...]
"""

import argparse

import yaml

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    print(yaml.safe_dump(config.to_dict(), sort_keys=False, allow_unicode=True), end="")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    run_cli(main, parser)
