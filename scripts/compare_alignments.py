"""Two alignments of the gold pairs, scored side by side, with a paired bootstrap: is the
difference in AER more than the luck of which 50 pairs were annotated?

    python scripts/align.py configs/tatoeba.yaml --input GOLD --output attention.links
    python scripts/align.py configs/tatoeba.yaml --input GOLD --output posterior.links --weights posterior
    python scripts/compare_alignments.py GOLD attention.links posterior.links [--resamples 2000]

GOLD is the gold file (default of make: ../shared/data/align/gold.tsv); each links file has one
Pharaoh line per gold pair, in order (what align.py writes). Prints each one's precision, recall
and AER, and the difference AER(A) − AER(B) with its 95 % bootstrap interval.
"""

import argparse

from nmt.align.links import parse_links, read_gold
from nmt.align.metrics import paired_bootstrap, score_alignments
from nmt.cli import run_cli
from nmt.errors import NMTError
from nmt.io import read_lines


def read_links(path: str, pairs: int) -> list[set]:
    lines = read_lines(path)
    if len(lines) != pairs:
        raise NMTError(f"{path}: {len(lines)} lines of links for {pairs} gold pairs; align the "
                       f"gold file itself (align.py --input GOLD --output {path})")
    return [parse_links(line, f"{path}:{n}") for n, line in enumerate(lines, start=1)]


def main(args: argparse.Namespace) -> None:
    gold = read_gold(args.gold)
    sure, possible = [p.sure for p in gold], [p.possible for p in gold]
    a, b = (read_links(path, len(gold)) for path in (args.a, args.b))
    for name, links in ((args.a, a), (args.b, b)):
        scores = score_alignments(links, sure, possible)
        print(f"{name}: AER {100 * scores.aer:.1f}, precision {100 * scores.precision:.1f}, "
              f"recall {100 * scores.recall:.1f}")
    # paired_bootstrap's difference is AER(second) − AER(first): pass B first for AER(A) − AER(B)
    test = paired_bootstrap(b, a, sure, possible, args.resamples, args.seed)
    print(f"AER(A) − AER(B) = {100 * test.difference:.1f} points, 95 % interval "
          f"[{100 * test.low:.1f}, {100 * test.high:.1f}] over {args.resamples} paired resamples "
          f"of the {len(gold)} pairs; B not better in {100 * test.a_worse_or_equal:.1f} % of them")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("gold", help="the gold alignment file")
    parser.add_argument("a", help="links A, one line per gold pair")
    parser.add_argument("b", help="links B, one line per gold pair")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    run_cli(main, parser)
