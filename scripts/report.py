"""Print one table of every experiment under runs/: architecture, attention and its query order,
subword units, size, steps, training time, dev BLEU, test BLEU, chrF and AER, all read from the
files training and evaluation wrote (see nmt/evaluation/report.py). Averages of checkpoints and ensembles,
evaluated into results.<label>.json, get rows of their own.

    python scripts/report.py [--runs runs]
    python scripts/report.py --markdown      # a Markdown table, signatures below
    python scripts/report.py --commands      # and the commands that made each run
    python scripts/report.py --curves        # and each run's dev BLEU against (CPU) minutes
    python scripts/report.py --docs docs/results.md   # rewrite that page's tables (make docs)
"""

import argparse

from nmt.cli import run_cli
from nmt.evaluation.curves import format_curves
from nmt.evaluation.report import collect_runs, format_commands, format_markdown, format_table
from nmt.evaluation.results_page import update_results_page


def main(args: argparse.Namespace) -> None:
    rows = collect_runs(args.runs)
    if args.docs:
        if update_results_page(args.docs, rows):
            print(f"{args.docs}: tables of {len(rows)} runs written")
        else:
            print(f"no run with a train_summary.json under {args.runs}/: nothing to write, "
                  f"{args.docs} left as it was")
        return
    if not rows:
        print(f"no runs under {args.runs}/ yet: `make train`, then `make eval`")
        return
    print(format_markdown(rows) if args.markdown else format_table(rows))
    if args.commands:
        print()
        print(format_commands(args.runs, rows))
    if args.curves:
        print()
        print(format_curves(args.runs, sorted({row["run"] for row in rows})))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", default="runs", help="the folder holding the runs (default: runs)")
    parser.add_argument("--markdown", action="store_true",
                        help="print a Markdown table, with the sacrebleu signatures once below it")
    parser.add_argument("--commands", action="store_true",
                        help="also list the commands recorded in each run's commands.txt")
    parser.add_argument("--curves", action="store_true",
                        help="also print each run's dev BLEU at every validation, with its minutes")
    parser.add_argument("--docs", metavar="PAGE",
                        help="rewrite the generated tables of PAGE (docs/results.md), one per machine")
    run_cli(main, parser)
