"""`make compare`: is B better than A on the same split, or is the difference chance?

Each side is a results file `make eval` wrote (or a run folder: the results its `make eval`
writes, e.g. results.ensemble.average_best5.rerank.json for the default). Its outputs
are read from the hypotheses file beside it (a copied run folder carries its own), else from the
path it recorded, and checked against the checksum it recorded: outputs that changed since they
were scored are an error naming the file, never a silent comparison of something else.

The verdict is honest about what the paired bootstrap can say (nmt/evaluation/significance.py):
- identical outputs are reported as identical, with no test (sacrebleu's p-value of a system
  against itself is 1/(resamples + 1), which reads like a finding and is none);
- "significant" only when p < 0.05 and the 95% interval of the difference excludes zero;
- the decoding settings in which A and B differ are named.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path

from nmt.config.loader import load_saved_config
from nmt.data.prepare import load_prepared
from nmt.decoding.plan_labels import planned_label
from nmt.errors import NMTError
from nmt.evaluation.significance import paired_bootstrap
from nmt.io import file_sha256, read_lines

log = logging.getLogger(__name__)

# What a results file records of how it decoded, compared between the two sides
DECODING_KEYS = ("checkpoints", "rerank", "rerank_weights", "dtype", "beam_size")


@dataclass
class Side:
    file: Path  # the results file
    results: dict
    hypotheses: list[str]


def read_side(path: str | Path) -> Side:
    """The results file `path` names (a run folder: the one its `make eval` writes) and its
    checked outputs."""
    path = Path(path)
    file = eval_results(path) if path.is_dir() else path
    if not file.is_file():
        raise NMTError(f"{file}: no such results file; `make eval` writes it")
    try:
        results = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise NMTError(f"{file}: not a results file ({error})") from None
    return Side(file, results, checked_hypotheses(file, results))


def eval_results(run: Path) -> Path:
    """The results file `make eval` writes in a run folder: the label of the run's decoding
    plan, resolved (only read) on this machine (results.ensemble.average_best5.rerank.json for
    the default in float32); a run that no longer resolves (checkpoints gone) by its saved
    config alone, and said so. Never another decoding's results in its place."""
    from nmt.decoding.plan import run_plan

    try:
        label = run_plan(run, "cpu").label
    except NMTError as error:
        try:
            config = load_saved_config(run / "config.yaml")
        except NMTError:
            return _only_results(run, error)
        label = planned_label(dataclasses.replace(config, runs_dir=str(run.parent),
                                                  name=run.name), tuned=True)
        log.info("%s: its plan does not resolve (%s); reading the results its config names", run, error)
    planned = run / (f"results.{label}.json" if label else "results.json")
    if not planned.is_file():
        present = sorted(p.name for p in run.glob("results*.json"))
        raise NMTError(f"{run}: no {planned.name}, the results of the decoding `make eval` "
                       f"makes of it now; run `make eval`, or name one of its results files "
                       f"({', '.join(present) or 'none'})")
    return planned


def _only_results(folder: Path, why: NMTError) -> Path:
    """A folder that is not a run (results kept without their run): its one results file, said
    so; several or none is an error naming them."""
    present = sorted(folder.glob("results*.json"))
    if len(present) != 1:
        raise NMTError(f"{folder}: not a run folder ({why}) and {len(present)} results files "
                       f"({', '.join(p.name for p in present) or 'none'}); name the one to compare")
    log.info("%s: not a run folder; comparing its one results file, %s", folder, present[0].name)
    return present[0]


def checked_hypotheses(results_file: Path, results: dict) -> list[str]:
    """The outputs the results scored: the file of their name beside the results file (a copied
    run folder), else the path recorded; either way checked against the recorded checksum."""
    recorded = Path(results["hypotheses"])
    beside = results_file.parent / recorded.name
    path = beside if beside.is_file() else recorded
    if not path.is_file():
        raise NMTError(f"{results_file}: its outputs {recorded} are gone, and no {recorded.name} "
                       f"lies beside it; run `make eval` again")
    expected = results.get("hypotheses_sha256")
    if expected is None:
        log.warning("%s records no checksum of its outputs (written before they had one): %s is "
                    "compared unchecked", results_file, path)
    elif file_sha256(path) != expected:
        raise NMTError(f"{path} changed after {results_file} scored it (its checksum differs): "
                       f"another evaluation wrote over it. Run `make eval` again for {results_file}")
    return read_lines(path)


def references_of(side: Side) -> list[str]:
    """The English references of the split the results scored, from the run's saved config."""
    config_path = side.file.parent / "config.yaml"
    if not config_path.is_file():
        raise NMTError(f"{config_path}: missing, so the references are unknown; "
                       f"pass --references FILE")
    prepared = load_prepared(load_saved_config(config_path))  # saved by any version
    return read_lines(prepared.text(side.results["split"], "en"))


def differing_settings(a: dict, b: dict) -> list[str]:
    """The decoding settings in which two results differ, as "key: A → B"."""
    found = [f"{key}: {a.get(key)} → {b.get(key)}" for key in DECODING_KEYS if a.get(key) != b.get(key)]
    search_a, search_b = a.get("search") or {}, b.get("search") or {}
    found += [f"search.{key}: {search_a.get(key)} → {search_b.get(key)}"
              for key in sorted(set(search_a) | set(search_b)) if search_a.get(key) != search_b.get(key)]
    return found


def verdict(difference: float, interval: tuple[float, float], p_value: float) -> str:
    """"significant" only when p < 0.05 and the 95% interval excludes zero."""
    low, high = interval
    excludes_zero = low > 0 or high < 0
    if p_value < 0.05 and excludes_zero:
        return f"significant at 0.05 ({'B' if difference > 0 else 'A'} is better)"
    return "not significant at 0.05: within chance"


def compare(a: Side, b: Side, references: list[str], samples: int = 1000) -> list[str]:
    """The comparison's report, one line each."""
    if a.results["split"] != b.results["split"]:
        raise NMTError(f"{a.file} scores the {a.results['split']} split but {b.file} the "
                       f"{b.results['split']} split: compare outputs of the same split")
    if not len(references) == len(a.hypotheses) == len(b.hypotheses):
        raise NMTError(f"{len(references)} references, {len(a.hypotheses)} outputs in {a.file}, "
                       f"{len(b.hypotheses)} in {b.file}: not one split")
    settings = differing_settings(a.results, b.results)
    lines = [f"{a.results['split']} split, {len(references)} sentences",
             "they differ in: " + ("; ".join(settings) if settings else "no recorded setting")]
    if a.hypotheses == b.hypotheses:
        return lines + [f"A  {a.file}", f"B  {b.file}",
                        "identical outputs: the same translation of every sentence, nothing to test"]
    result = paired_bootstrap(references, a.hypotheses, b.hypotheses, samples=samples)
    low, high = result["interval"]
    return lines + [
        f"{result['samples']} paired resamples",
        f"A  {a.file}  BLEU {result['baseline_bleu']:.2f}",
        f"B  {b.file}  BLEU {result['system_bleu']:.2f}",
        f"B - A  {result['difference']:+.2f}  95% interval [{low:+.2f}, {high:+.2f}]  "
        f"p = {result['p_value']:.4f}: "
        + verdict(result["difference"], (low, high), result["p_value"]),
        f"signature  {result['signature']}"]
