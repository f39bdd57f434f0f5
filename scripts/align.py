"""Word alignment with a trained model's attention (or eflomal), in Pharaoh format.

    python scripts/align.py configs/tatoeba.yaml --input pairs.tsv --output pairs.links
    python scripts/align.py configs/tatoeba.yaml --gold ../shared/data/align/gold.tsv
    python scripts/align.py configs/tatoeba.yaml --gold GOLD --method grow-diag-final-and
    python scripts/align.py configs/tatoeba.yaml --gold GOLD --weights posterior --method grow-diag-final-and
    python scripts/align.py configs/tatoeba.yaml --gold GOLD --weights bidirectional --method product
    python scripts/align.py configs/tatoeba.yaml --gold GOLD --aligner eflomal --units char

Input: `Chinese<TAB>English` lines (raw text), `id<TAB>Chinese<TAB>English` (space-separated
units), or the gold file itself (stdin when neither --input nor --gold is given). Output: one line
of links `i-j` per input line, Chinese character i - English Moses token j, both from 0 (the gold
file's units, whatever the model's own units are). The model forced-decodes the given English
(teacher forcing, no search) and its attention (or, with --weights posterior, a recurrent
model's posterior: the attention times how well each source token alone predicts the English
token, renormalized) becomes links by --method:
argmax (each English token to its most attended source word), threshold (every weight >=
--threshold), intersect, union or grow-diag-final-and of the row- and column-wise argmax.

--weights bidirectional aligns with two models: the run's (Chinese → English) and its reverse
model (English → Chinese: the run's channel model, training.channel_members, or --reverse PATH),
each teacher-forced on the pair, each read as its posterior where it is a recurrent model
(bidirectional-attention: as its attention). --method then combines the two directions
(nmt/align/agreement.py, whose constants hold the defaults): grow-diag-final-and, intersect or
union of each direction's argmax links, or product / mean of the two distributions, linking
where the score reaches --threshold or both directions' argmax agree. Without --weights, the
best the run allows: bidirectional where it has a channel model, else a recurrent model's
posterior with grow-diag-final-and, else its attention.

The model is the one `make eval` decodes (nmt/decoding/plan.py): a run trained with
training.members > 1 aligns as their ensemble, by the members' mean attention (or mean
posterior); --checkpoint names one model. eflomal learns from the training split plus the
pairs, both directions, symmetrized by --method (default grow-diag-final-and).

With --gold, the gold pairs are aligned and scored: precision, recall and alignment error rate go
to runs/<name>/alignment.json (eflomal: runs/eflomal-<units>/alignment.json), the links beside it.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import sys

from nmt.align.agreement import DEFAULT_BIDIRECTIONAL_METHOD, DEFAULT_THRESHOLDS
from nmt.align.links import format_links, parse_pairs, read_gold, read_pairs
from nmt.align.stage import (ALIGNERS, ALL_METHODS, WEIGHTS, AlignOptions, align, alignment_path,
                             score, soft_lines, write_evaluation, write_links)
from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.errors import NMTError
from nmt.io import atomic_write_lines, decode_lines
from nmt.runtime import set_threads


def main(args: argparse.Namespace) -> None:
    config = load_config(args.config, args.overrides)
    set_threads(config.training.threads)
    options = AlignOptions(args.aligner, args.method, args.threshold, args.units, args.checkpoint,
                           args.layer, args.head, args.weights, args.reverse)
    options.check()
    if args.gold and args.input:
        raise NMTError("give --input (pairs to align) or --gold (the gold file, aligned and scored), "
                       "not both")
    if args.gold:
        pairs = read_gold(args.gold)
    elif args.input:
        pairs = read_pairs(args.input)
    else:
        pairs = parse_pairs(decode_lines(sys.stdin.buffer.read(), "<stdin>"), "<stdin>")
    if args.soft and options.aligner != "attention":
        raise NMTError("--soft writes attention weights: it needs --aligner attention")
    result = align(config, pairs, options)
    if args.soft:
        atomic_write_lines(args.soft, soft_lines(pairs, result.soft))
    if args.output:
        write_links(args.output, result.links)
    elif not args.gold:
        sys.stdout.reconfigure(encoding="utf-8")
        sys.stdout.write("".join(format_links(x) + "\n" for x in result.links))
    if args.gold:
        scores = score(pairs, result.links)
        path = alignment_path(config, options)
        write_evaluation(path, path.parent.name, args.gold, result, scores, " ".join(sys.argv))
        how = ", ".join(x for x in (result.description.get("weights"), result.description["method"]) if x)
        print(f"{options.aligner} ({how}): AER {100 * scores.aer:.1f}, "
              f"precision {100 * scores.precision:.1f}, recall {100 * scores.recall:.1f} on "
              f"{scores.pairs} pairs")
        print(f"results: {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser, "align")
    parser.add_argument("--input", help="pairs to align, one a line (default: stdin)")
    parser.add_argument("--output", help="where the links go (default: stdout)")
    parser.add_argument("--gold", help="a gold alignment file: align its pairs and score them")
    parser.add_argument("--checkpoint", help="one model's checkpoint file (default: what make eval "
                                               "scores: the members' ensemble of a run with "
                                               "training.members > 1, eval.average's average, "
                                               "else best.pt)")
    parser.add_argument("--aligner", choices=ALIGNERS, default="attention")
    parser.add_argument("--method", choices=ALL_METHODS,
                        help="attention → links (default argmax; posterior: grow-diag-final-and); "
                             "--weights bidirectional: how "
                             f"the two directions combine (default {DEFAULT_BIDIRECTIONAL_METHOD}); "
                             "eflomal: intersect, union or "
                             "grow-diag-final-and (the default) of its two directions")
    parser.add_argument("--threshold", type=float,
                        help="for --method threshold: the least weight that makes a link (default "
                             "0.5); product / mean: the least agreement score (default "
                             f"{DEFAULT_THRESHOLDS['product']} / {DEFAULT_THRESHOLDS['mean']})")
    parser.add_argument("--units", choices=("char", "word"), default="char",
                        help="eflomal: learn from characters or the training words (default char)")
    parser.add_argument("--layer", type=int,
                        help="align with this decoder layer's cross-attention (a Transformer's; "
                             "-1: the last); default: the model's own alignment")
    parser.add_argument("--head", type=int,
                        help="with one head of that layer instead of their average")
    parser.add_argument("--weights", choices=WEIGHTS,
                        help="the matrix links come from: the attention, or posterior: the "
                             "attention reweighted by how well each source token alone predicts "
                             "the English token (recurrent models), or bidirectional: the run's "
                             "model and its reverse model together (default: the best measured "
                             "the run allows: bidirectional where it has a channel model, else "
                             "posterior for a recurrent model, else attention)")
    parser.add_argument("--reverse", metavar="PATH",
                        help="--weights bidirectional: the reverse (English → Chinese) model's "
                             "checkpoint (default: the run's channel model)")
    parser.add_argument("--soft", metavar="FILE.jsonl",
                        help="also write each pair's attention matrix, one JSON object a line")
    run_cli(main, parser)
