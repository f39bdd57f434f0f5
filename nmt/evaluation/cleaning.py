"""data.clean in the report and the docs: what its filters dropped from a run's data, and how
much of each kind of noise they remove (bench/bench_clean.py --record).

- A run whose saved config turns on any data.clean filter gets, on its own row (not on its
  members' or its labelled rows), `clean_read` (the pairs the filters saw) and `clean_dropped`
  ({filter: pairs}, the filters that dropped any) from `counts.clean` of its prepared folder's
  manifest.json (<data.prepared_dir>/<data hash>/, data.prepared_dir taken from the current
  directory, as prepare takes it). Where that folder is not here the row gets neither key, so
  the ledger keeps what it had.
- <runs>/<folder>/cleaning_bench.json, written by `bench/bench_clean.py --record <runs>/<folder>`,
  is a ledger entry of its own, named after the folder, on the bench's machine (its CPU), with the
  whole file under `cleaning_bench`; it is no row of the per-machine tables.
docs/results.md shows them in two tables: "Cleaning" (a row per run, a column per filter) and
"Noise removed" (a row per kind of noise the bench injected).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nmt.config.clean_schema import CleanConfig
from nmt.config.loader import build_saved_config
from nmt.errors import NMTError
from nmt.evaluation.run_files import read_json

BENCH_FILE = "cleaning_bench.json"
CLEANING = ["clean_read", "clean_dropped", "cleaning_bench"]  # the ledger keys this file adds
TOP_FILTERS = 2  # the filters named per kind of noise in the Noise removed table


def clean_counts(run: Path, config: dict | None) -> dict[str, Any]:
    """{clean_read, clean_dropped} of the run's prepared data, from its saved `config` (the
    mapping of config.yaml); {} for a member folder, a run with no filter on, or a prepared
    folder that is not here."""
    if config is None or re.fullmatch(r"member\d+", run.name):  # a member: its run's data
        return {}
    try:
        saved = build_saved_config(config, str(run / "config.yaml"))
    except NMTError:  # a config this version no longer reads
        return {}
    if saved.data.clean == CleanConfig():
        return {}
    manifest = read_json(Path(saved.data.prepared_dir) / saved.data_hash() / "manifest.json")
    counts = (manifest or {}).get("counts") or {}
    dropped = (counts.get("clean") or {}).get("dropped")
    if not isinstance(dropped, dict) or not isinstance(counts.get("pairs_read"), int):
        return {}
    return {"clean_read": counts["pairs_read"] - (counts.get("beyond_max_pairs") or 0),
            "clean_dropped": dict(dropped)}


def bench_rows(runs_dir: str | Path) -> list[dict]:
    """A row per <runs_dir>/*/cleaning_bench.json, for the ledger (nmt/evaluation/ledger.py)."""
    rows = []
    for path in sorted(Path(runs_dir).glob(f"*/{BENCH_FILE}")):
        bench = read_json(path)
        if bench is None or not isinstance(bench.get("kinds"), dict):
            continue
        rows.append({"name": path.parent.name, "run": path.parent.name,
                     "machine": bench.get("machine") or "unknown CPU", "cleaning_bench": bench})
    return rows


def is_bench(entry: dict) -> bool:
    """An entry of bench/bench_clean.py's figures, no run's."""
    return "cleaning_bench" in entry


def cleaning_table(rows: list[dict]) -> str | None:
    """A Markdown table of the rows with clean counts: run, pairs read, dropped in all, then a
    column per filter that dropped any pair in any row; None when no row has them."""
    cleaned, seen = [], set()
    for row in sorted(rows, key=lambda r: r["name"]):
        dropped, read = row.get("clean_dropped"), row.get("clean_read")
        key = (row["name"], read, tuple(sorted((dropped or {}).items())))
        if isinstance(dropped, dict) and read and key not in seen:  # one row on two machines: once
            seen.add(key)
            cleaned.append(row)
    if not cleaned:
        return None
    filters = sorted({name for row in cleaned for name, count in row["clean_dropped"].items()
                      if count})
    lines = ["| run | pairs read | dropped | " + " | ".join(filters) + " |",
             "|---|" + "---:|" * (2 + len(filters))]
    for row in cleaned:
        dropped, read = row["clean_dropped"], row["clean_read"]
        total = sum(dropped.values())
        cells = [f"`{row['name']}`", f"{read:,}", f"{total:,} ({100 * total / read:.1f}%)"]
        lines.append("| " + " | ".join(cells + [f"{dropped.get(name, 0):,}" for name in filters])
                     + " |")
    return "\n".join(lines)


def cleaning_section(entries: list[dict]) -> str | None:
    """docs/results.md's "Cleaning" table, with its heading; None when no entry has counts."""
    table = cleaning_table(entries)
    if table is None:
        return None
    return ("### Cleaning\n\nThe pairs `data.clean`'s filters dropped in prepare, of those read, "
            "per filter (the manifest's `counts.clean` of each run's prepared folder; examples in "
            "its `dropped/<filter>.tsv`; [data.md](data.md#cleaning-a-noisy-corpus)). 0: the "
            f"filter dropped none, or was off.\n\n{table}")


def noise_section(entries: list[dict]) -> str | None:
    """docs/results.md's "Noise removed" table, one per cleaning_bench.json in the ledger; None
    when there is none."""
    benches = sorted((e for e in entries if is_bench(e)), key=lambda e: (e["machine"], e["name"]))
    if not benches:
        return None
    return "### Noise removed\n\n" + "\n\n".join(_noise_table(entry) for entry in benches)


def _noise_table(entry: dict) -> str:
    """One bench's settings, its table of kinds, the clean pairs lost and the prepare time."""
    bench = entry["cleaning_bench"]
    rate, pairs = bench.get("rate"), bench.get("corpus_pairs")
    lines = [f"`{bench.get('command') or 'bench/bench_clean.py'}` on {entry['machine']}"
             f" ({entry.get('source', entry['name'])}/{BENCH_FILE}, {bench.get('recorded_at', '-')}): "
             f"{_percent(rate)} of {_count(pairs)} pairs noised, seed {bench.get('seed', '-')}.", "",
             "| kind | injected | removed | removed by |", "|---|---:|---:|---|"]
    for kind, found in bench["kinds"].items():
        lines.append(f"| {kind} | {_count(found.get('injected'))} | "
                     f"{_percent(found.get('share_removed'), 1)} | {_top(found.get('by_filter'))} |")
    surface = bench.get("surface") or {}
    lines.append(f"| surface kinds (all but misaligned) | {_count(surface.get('injected'))} | "
                 f"{_percent(surface.get('share_removed'), 1)} | |")
    clean = bench.get("clean_pairs") or {}
    kept, lost = clean.get("kept"), clean.get("lost")
    total = kept + lost if isinstance(kept, int) and isinstance(lost, int) else None
    by = _top(clean.get("by_filter"), None)
    lines += ["", f"Clean pairs lost: {_percent(clean.get('share_lost'), 2)} ({_count(lost)} of "
                  f"{_count(total)}{'' if by == '-' else f'; {by}'})."]
    prepare = bench.get("prepare")
    if isinstance(prepare, dict):
        lines.append(f"Prepare, cold (a fresh `scripts/prepare.py`): {_number(prepare.get('with_clean'), 1)} s "
                     f"with data.clean, {_number(prepare.get('without_clean'), 1)} s without "
                     f"(×{_number(prepare.get('ratio'), 2)}).")
    elif bench.get("filter_seconds"):
        rate_s = (bench.get("filter_pairs") or 0) / bench["filter_seconds"]
        lines.append(f"Prepare time not measured (bench_clean.py's `--prepare`); the filters alone ran at "
                     f"{rate_s:,.0f} pairs/s.")
    return "\n".join(lines)


def _top(by_filter: Any, most: int | None = TOP_FILTERS) -> str:
    """"han_share 900, copies 116" (the `most` filters that removed most), "others 3" after."""
    if not isinstance(by_filter, dict) or not by_filter:
        return "-"
    ranked = sorted(by_filter.items(), key=lambda item: (-item[1], item[0]))
    shown = ranked if most is None else ranked[:most]
    text = ", ".join(f"{name} {count:,}" for name, count in shown)
    rest = sum(count for _, count in ranked[len(shown):])
    return text + (f", others {rest:,}" if rest else "")


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "-"


def _number(value: Any, digits: int) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def _percent(share: Any, digits: int = 0) -> str:
    return f"{100 * share:.{digits}f}%" if isinstance(share, (int, float)) else "-"
