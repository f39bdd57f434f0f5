"""docs/results.jsonl: every measured row of this project, committed, so that `make docs` can
write the results tables on any machine, including one whose runs/ is empty.

One JSON object a line, one per (machine, row name), with the columns of `make report`
(nmt/evaluation/report.py) and more:
- `source`: where the figures come from (`runs/<run>` for a run folder `make docs` read);
- `recipe`: set on the row that `make train && make eval` gives for a config file as it is
  (the README's table lists these rows); "`configs/x.yaml`", or by hand "`configs/x.yaml`: how
  it was run" for the file as it is, anything else after the name ("of an earlier commit",
  overrides) for a variant of it (nmt/evaluation/examples.py's `recipe_config`);
- `examples`: the example sentences and their translations ([{"zh": ..., "en": ...}],
  nmt/evaluation/examples.py), on the rows whose results file holds them;
- `alignment`: the AER, in points, of every extraction alignment.json holds ("attention argmax",
  "posterior grow-diag-final-and", ...: nmt/align/stage.py's `evaluation_key`);
- `requests_per_second`, `serve_clients`, `serve_failed`, `disk_mb`, `serve_mb_peak`, `serve_mb_models`,
  `serve_machine`: `make serve` measured by bench/bench_serve.py --record (serving.<label>.json),
  only on the rows that have one;
- `clean_read`, `clean_dropped`: the pairs data.clean's filters saw and what each dropped
  ({filter: pairs}), from the run's prepared folder's manifest, on the own rows of runs with a
  filter on whose prepared folder was here (nmt/evaluation/cleaning.py);
- `cleaning_bench`: an entry of its own (named after its folder, on the bench's CPU) holding the
  figures of bench/bench_clean.py --record (runs/<folder>/cleaning_bench.json), no run's row.

Merging (`merge`): the rows of a run folder present here replace that run's entries on its
machine; entries of runs that are not here are kept, so an empty runs/ changes nothing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from nmt.config.loader import build_saved_config
from nmt.decoding.plan_labels import planned_label, same_decoding
from nmt.errors import NMTError
from nmt.evaluation.cleaning import CLEANING
from nmt.evaluation.report import COLUMNS
from nmt.io import atomic_write_text

LEDGER = "docs/results.jsonl"
NOT_RECORDED = "machine not recorded"  # report.py's machine() for a run without train_summary
KEPT = [key for key, _ in COLUMNS] + ["machine", "run", "label", "split", "signature",
                                      "chrf_signature", "source", "recipe", "alignment", "examples"]
SERVING = ["requests_per_second", "serve_clients", "serve_failed", "disk_mb", "serve_mb_peak",
           "serve_mb_models", "serve_machine"]  # nmt/evaluation/run_row.py's add_serving
KEPT += SERVING + CLEANING
# `python scripts/train.py configs/x.yaml`, and nothing after it: the config file as it is
TRAIN_COMMAND = re.compile(r"scripts/train\.py\s+(configs/\S+\.yaml)\s*$")


def read_ledger(path: str | Path) -> list[dict]:
    """The ledger's entries; [] when the file does not exist yet."""
    path = Path(path)
    if not path.is_file():
        return []
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as error:
            raise NMTError(f"{path}:{number}: not a JSON object ({error.msg}); fix or delete "
                           f"the line") from None
        if not isinstance(entry, dict) or not entry.get("name") or not entry.get("machine"):
            raise NMTError(f"{path}:{number}: an entry needs at least 'name' and 'machine'")
        entries.append(entry)
    return entries


def write_ledger(path: str | Path, entries: list[dict]) -> None:
    """One entry a line, sorted by machine and name, so that a change is a small diff."""
    ordered = sorted(entries, key=lambda entry: (entry["machine"], entry["name"]))
    atomic_write_text(path, "".join(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
                                    for entry in ordered))


def merge(entries: list[dict], rows: list[dict], runs_dir: str | Path) -> list[dict]:
    """The ledger after reading the run folders: each (machine, run) found among `rows` loses
    its old entries and gets its rows now; every other entry stays as it was. A row that says
    neither where it trained nor an AER (a half-copied folder) is left out. A recipe written into
    an old entry by hand (what the row is a recipe of) stays on the row that replaces it, in place
    of the config file's name; so do the clean counts of a run whose prepared folder is not here."""
    fresh = [ledger_entry(row, runs_dir) for row in rows
             if row.get("machine") not in (None, NOT_RECORDED) or row.get("aer") is not None]
    old = {(entry["machine"], entry.get("run"), entry["name"]): entry for entry in entries}
    for entry in fresh:
        before = old.get((entry["machine"], entry["run"], entry["name"])) or {}
        if before.get("recipe"):  # said by hand, it says more than the config file's name
            entry["recipe"] = before["recipe"]
        if "clean_read" not in entry:  # its prepared folder is not here: the counts stay
            entry |= {key: before[key] for key in ("clean_read", "clean_dropped") if key in before}
    replaced = {(entry["machine"], entry["run"]) for entry in fresh}
    kept = [entry for entry in entries if (entry["machine"], entry.get("run")) not in replaced]
    return kept + fresh


def ledger_entry(row: dict, runs_dir: str | Path) -> dict:
    """A report row as a ledger entry: its columns, with the split apart from the BLEU."""
    entry = {key: row.get(key) for key in KEPT if row.get(key) is not None}
    entry |= {"name": row["name"], "run": row["run"],
              "machine": row.get("machine") or NOT_RECORDED,
              "source": f"{Path(runs_dir).as_posix()}/{row['run']}"}
    label = row["name"][len(row["run"]):].strip()[1:-1] or None  # "run (label)" → label
    if label:
        entry["label"] = label
    bleu = row.get("test_bleu")
    if isinstance(bleu, str):  # "NN.NN (dev)": a labelled result scored on another split
        value, _, split = bleu.partition(" ")
        entry["test_bleu"], entry["split"] = float(value), split.strip("()")
    recipe = _recipe(Path(runs_dir) / row["run"])
    if recipe is not None and same_decoding(label, recipe[1]):  # in float32, bf16 or on a GPU
        entry["recipe"] = f"`{recipe[0]}`"
    return entry


def _recipe(run: Path) -> tuple[str, str | None] | None:
    """(config file, label of the results `make eval` writes) for a run trained from a config
    file with no overrides (commands.txt, config.yaml); None for any other run."""
    commands = run / "commands.txt"
    if not commands.is_file():
        return None
    configs = [match.group(1) for line in commands.read_text(encoding="utf-8").splitlines()
               if (match := TRAIN_COMMAND.search(line))]
    try:
        config = yaml.safe_load((run / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    if not configs or not isinstance(config, dict):
        return None
    return configs[0], _eval_label(config)


def _eval_label(config: dict) -> str | None:
    """The label of what `make eval` scores with this saved config (nmt/decoding/plan.py): the
    members' ensemble, each averaged as eval.average says, or the average, or (None) the run's
    own checkpoint, with ".rerank" when rescoring models choose."""
    try:
        return planned_label(build_saved_config(config, "config.yaml"))
    except NMTError:  # a config this version no longer reads: no recipe row
        return None


def as_report_row(entry: dict) -> dict:
    """An entry as nmt/evaluation/report.py formats it: a BLEU of another split reads "(dev)"."""
    row = dict(entry)
    if entry.get("split", "test") != "test" and entry.get("test_bleu") is not None:
        row["test_bleu"] = f"{entry['test_bleu']:.2f} ({entry['split']})"
    return row
