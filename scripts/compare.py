"""Is B better than A, or is the difference chance? The paired bootstrap of two outputs of the
same split (sacrebleu's, 1,000 resamples): the BLEU difference, its 95% interval and p.

    python scripts/compare.py runs/a runs/b              # their results.json
    python scripts/compare.py runs/a/results.json runs/b/results.ensemble.json
    make compare A=runs/a B=runs/b

A and B are run folders (their results.json) or results*.json files that `make eval` wrote; the
references are those of A's prepared split (or --references FILE). Both must be outputs of the
same split.
"""

import argparse
import json
import logging
from pathlib import Path

from nmt.cli import run_cli
from nmt.config.loader import load_saved_config
from nmt.data.prepare import load_prepared
from nmt.errors import NMTError
from nmt.evaluation.significance import paired_bootstrap
from nmt.io import read_lines


def read_results(path: Path) -> tuple[Path, dict]:
    """The results file `path` names (a run folder: its results.json) and what it holds."""
    file = path / "results.json" if path.is_dir() else path
    if not file.is_file():
        raise NMTError(f"{file}: no such results file; `make eval` writes it")
    return file, json.loads(file.read_text(encoding="utf-8"))


def hypotheses_of(results_file: Path, results: dict) -> list[str]:
    """The outputs the results scored: the file they name, else the file of that name beside
    them (a run folder copied or moved keeps its outputs but not the path it recorded)."""
    recorded = Path(results["hypotheses"])
    for path in (recorded, results_file.parent / recorded.name):
        if path.is_file():
            return read_lines(path)
    raise NMTError(f"{results_file}: its outputs {recorded} are gone, and no {recorded.name} lies "
                   f"beside it; run `make eval` again")


def references_of(results_file: Path, results: dict) -> list[str]:
    """The English references of the split the results scored, from the run's saved config."""
    config_path = results_file.parent / "config.yaml"
    if not config_path.is_file():
        raise NMTError(f"{config_path}: missing, so the references are unknown; "
                       f"pass --references FILE")
    prepared = load_prepared(load_saved_config(config_path))  # saved by any version
    return read_lines(prepared.text(results["split"], "en"))


def main(args: argparse.Namespace) -> None:
    logging.getLogger("sacrebleu").setLevel(logging.WARNING)  # its progress lines, not ours
    (file_a, a), (file_b, b) = read_results(Path(args.a)), read_results(Path(args.b))
    if a["split"] != b["split"]:
        raise NMTError(f"{file_a} scores the {a['split']} split but {file_b} the {b['split']} "
                       f"split: compare outputs of the same split")
    references = (read_lines(args.references) if args.references
                  else references_of(file_a, a))
    baseline, system = hypotheses_of(file_a, a), hypotheses_of(file_b, b)
    if not len(references) == len(baseline) == len(system):
        raise NMTError(f"{len(references)} references, {len(baseline)} lines in "
                       f"{a['hypotheses']}, {len(system)} in {b['hypotheses']}: not one split")
    result = paired_bootstrap(references, baseline, system, samples=args.samples)
    low, high = result["interval"]
    verdict = "significant" if result["p_value"] < 0.05 else "not significant"
    print(f"{a['split']} split, {len(references)} sentences, {result['samples']} paired resamples")
    print(f"A  {file_a}  BLEU {result['baseline_bleu']:.2f}")
    print(f"B  {file_b}  BLEU {result['system_bleu']:.2f}")
    print(f"B - A  {result['difference']:+.2f}  95% interval [{low:+.2f}, {high:+.2f}]  "
          f"p = {result['p_value']:.4f} ({verdict} at 0.05)")
    print(f"signature  {result['signature']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a", help="the baseline: a run folder or a results*.json file")
    parser.add_argument("b", help="the system compared with it: a run folder or results*.json")
    parser.add_argument("--references", help="the reference translations, one a line "
                                             "(default: those of A's prepared split)")
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap resamples")
    run_cli(main, parser)
