"""Print one table of every experiment under runs/: architecture, attention and its query order,
subword units, size, steps, training time, dev BLEU, test BLEU with its 95% bootstrap interval,
the length ratio (and, below the table, per source-length bucket), chrF and AER, all read from the
files training and evaluation wrote (see nmt/evaluation/report.py). Averages of checkpoints and ensembles,
evaluated into results.<label>.json, get rows of their own.

    python scripts/report.py [--runs runs]
    python scripts/report.py --markdown      # a Markdown table, signatures below
    python scripts/report.py --commands      # and the commands that made each run
    python scripts/report.py --curves        # and each run's dev BLEU against (CPU) minutes
    python scripts/report.py --docs docs/results.md --readme README.md --alignment docs/alignment.md
        # make docs: merge the runs into docs/results.jsonl, then rewrite the pages' tables from it
"""

import argparse

from nmt.cli import run_cli
from nmt.evaluation.curves import format_curves
from nmt.evaluation.cleaning import cleaning_table
from nmt.evaluation.length import format_buckets
from nmt.evaluation.report import collect_runs, format_commands, format_markdown, format_table
from nmt.evaluation.ledger import LEDGER
from nmt.evaluation.results_page import update_docs


def format_length_rows(rows: list[dict]) -> str:
    """One line per scored row whose results hold length buckets (make eval writes them)."""
    return "\n".join(f"{row['run']}: {format_buckets(row['length_buckets'])}"
                     for row in rows if row.get("length_buckets"))


def main(args: argparse.Namespace) -> None:
    rows = collect_runs(args.runs)
    if args.docs:
        count = update_docs(args.ledger, rows, args.runs, args.docs, args.readme, args.alignment)
        pages = ", ".join(page for page in (args.docs, args.readme, args.alignment) if page)
        print(f"{args.ledger}: {count} rows ({len(rows)} from {args.runs}/); tables of {pages} "
              f"written from it")
        return
    if not rows:
        print(f"no runs under {args.runs}/ yet: `make train`, then `make eval`")
        return
    print(format_markdown(rows) if args.markdown else format_table(rows))
    by_length = format_length_rows(rows)
    if by_length:
        print()
        print("BLEU and length ratio by source length (characters; sentences in brackets):")
        print(by_length)
    cleaning = cleaning_table(rows)
    if cleaning:
        print()
        print("Pairs data.clean's filters dropped (each run's prepared folder's manifest):")
        print(cleaning)
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
                        help="merge the runs into the ledger, then rewrite the generated tables "
                             "of PAGE (docs/results.md) from it, one per machine")
    parser.add_argument("--ledger", default=LEDGER,
                        help=f"the committed file of every measured row (default: {LEDGER})")
    parser.add_argument("--readme", metavar="PAGE",
                        help="with --docs: also rewrite PAGE's (README.md's) table of recipes, "
                             "and its block of what to expect with the example translations")
    parser.add_argument("--alignment", metavar="PAGE",
                        help="with --docs: also rewrite PAGE's (docs/alignment.md's) AER tables")
    run_cli(main, parser)
