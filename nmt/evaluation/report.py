"""One table of every experiment under runs/: what it is, how long it trained, how well it does.

Every figure comes from a file a stage wrote, never from a hand-kept list:
- `train_summary.json` (training, when it ends): architecture, parameters, steps, training time,
  best dev BLEU; for a run still training or stopped early, the best (or last) checkpoint's
  progress and config instead;
- `config.yaml` (training, at the start): attention, the attention query order, subword units;
- `results.json` (evaluate, on the run's own best/last checkpoint): test BLEU with its 95%
  bootstrap interval, the length ratio (and per source-length bucket) and chrF, with the
  sacrebleu signature, and the translations of the example sentences (not a column: the
  ledger keeps them for `make docs`, nmt/evaluation/examples.py); `results.<label>.json`
  (evaluate, on an average of checkpoints, an ensemble or another checkpoint) each give a row
  of their own, "run (label)";
- `alignment.json` (alignment evaluation, if any): the AER of the attention's argmax links (a
  statistical aligner: its own symmetrized links) and of the posterior's grow-diag-final-and
  links, where those were scored;
- `serving.<label>.json` (bench/bench_serve.py --record, if run): `make serve`'s requests/s with
  concurrent clients and how many failed, the size on disk of what it decodes with and the
  serving process's peak memory, on the row of results.<label>.json ("best": results.json's);
  not columns of this table: docs/results.md's "Serving" table (nmt/evaluation/results_page.py);
- `commands.txt` (train, evaluate and average_checkpoints append to it): how each was made.

What is missing shows as "-". An ensemble's row counts the parameters of all its members and the
training time of all the runs they come from (looked up by run name under the same runs/ folder):
their CPU time summed, and their wall-clock time as the span they cover together, so that runs
trained side by side count their minutes once (train_summary.json's ended_at; runs written before
it had that key count as trained one after another).

Here `collect_runs` gathers the rows; a run's own row is made in nmt/evaluation/run_row.py (its
files read by run_files.py), the labelled rows in labelled_rows.py, and report_table.py holds
the columns and prints the table.
"""

from __future__ import annotations

from pathlib import Path

# The columns, the formats, a run's own row and the labelled rows live in files of their own;
# these names are importable from here too.
from nmt.evaluation.labelled_rows import labelled_rows, run_name
from nmt.evaluation.report_table import (COLUMNS, TEXT_COLUMNS, format_cell,  # noqa: F401
                                         format_commands, format_markdown, format_table)
from nmt.evaluation.run_row import ATTENTION_KEY, POSTERIOR_KEY, machine, run_row  # noqa: F401


def collect_runs(runs_dir: str | Path) -> list[dict]:
    """A row per run folder (one holding a config, checkpoints or results) and per member folder
    inside one, sorted by name, each followed by the rows of its labelled results."""
    runs_dir = Path(runs_dir)
    folders = sorted(p for p in runs_dir.iterdir() if p.is_dir()) if runs_dir.is_dir() else []
    folders = [folder for run in folders
               for folder in (run, *sorted(run.glob("member[0-9]*")))]
    own = {}
    for run in folders:
        found = run_row(run)
        if found is not None:
            own[run_name(run)] = found[0] | {"name": run_name(run), "run": run_name(run),
                                              "folder": run}
    rows = []
    for row in own.values():
        rows.append(row)
        rows.extend(labelled_rows(row["folder"], row, own))
    return rows
