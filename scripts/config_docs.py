"""Print docs/config.md, generated from the config schema (nmt/config/schema.py).

    python scripts/config_docs.py > docs/config.md        # what `make docs` runs
"""

import argparse

from nmt.cli import run_cli
from nmt.config.docs import config_markdown


def main(args: argparse.Namespace) -> None:
    print(config_markdown(), end="")


if __name__ == "__main__":
    run_cli(main, argparse.ArgumentParser(description=__doc__,
                                          formatter_class=argparse.RawDescriptionHelpFormatter))
