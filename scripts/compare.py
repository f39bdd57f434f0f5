"""Is B better than A, or is the difference chance? The paired bootstrap of two outputs of the
same split (sacrebleu's, 1,000 resamples): the BLEU difference, its 95% interval and p.

    python scripts/compare.py runs/a runs/b              # the results their make eval wrote
    python scripts/compare.py runs/a/results.json runs/b/results.ensemble.json
    make compare A=runs/a B=runs/b

A and B are run folders (the results their `make eval` writes) or results*.json files; the
references are those of A's prepared split (or --references FILE). Both must be outputs of the
same split. Each side's outputs are checked against the checksum its results recorded;
identical outputs are said to be identical, and "significant" needs p < 0.05 and an interval
that excludes zero (nmt/evaluation/compare.py).
"""

import argparse
import logging

from nmt.cli import run_cli
from nmt.evaluation.compare import compare, read_side, references_of
from nmt.io import read_lines


def main(args: argparse.Namespace) -> None:
    logging.getLogger("sacrebleu").setLevel(logging.WARNING)  # its progress lines, not ours
    a, b = read_side(args.a), read_side(args.b)
    references = read_lines(args.references) if args.references else references_of(a)
    print("\n".join(compare(a, b, references, args.samples)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the baseline: a run folder or a results*.json file")
    parser.add_argument("b", help="the system compared with it: a run folder or results*.json")
    parser.add_argument("--references", help="the reference translations, one a line "
                                             "(default: those of A's prepared split)")
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap resamples")
    run_cli(main, parser)
