"""Print one table of every experiment under runs/: attention type, size, steps, training time,
dev BLEU, test BLEU and chrF.

    python scripts/report.py [--runs runs]
"""

import argparse

from nmt.cli import run_cli
from nmt.report import collect_runs, format_table


def main(args: argparse.Namespace) -> None:
    rows = collect_runs(args.runs)
    if not rows:
        print(f"no runs under {args.runs}/ yet: `make train`, then `make eval`")
        return
    print(format_table(rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="runs", help="the folder holding the runs (default: runs)")
    run_cli(main, parser)
