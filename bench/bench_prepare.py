"""How long the prepare stage takes, and what it and the training start-up cost as the corpus grows.

    python bench/bench_prepare.py [CORPUS] [--config configs/tatoeba.yaml] [--workers 2 1]
    python bench/bench_prepare.py [CORPUS] --synthetic 270000 2700000 [--keep DIR] [--seed 0]

Without --synthetic: the real corpus prepared cold (an empty prepared_dir) and cached, each a
fresh `python scripts/prepare.py` process timed from start to exit, so it includes interpreter
start-up and imports, as a user sees it. Targets: < 10 s cold on 2 cores, < 1 s cached.

With --synthetic N...: the real corpus, then for each N a corpus of N lines made from it (each
line joins 1–3 random pairs of the real one: the English sides with a space, the Chinese ones with
nothing; seeded, written streaming, in the same TSV format) in a temporary folder or --keep DIR.
For each corpus:
  - prepare: a fresh scripts/prepare.py process (cold, --workers' first value): its wall clock and
    its peak RSS. Memory is read from /proc every 0.2 s for the process and all its descendants
    (the segmentation workers): "tree" is the largest sum over the tree seen at a poll, "proc" the
    largest single process's own high-water mark (VmHWM, exact, not sampled).
  - start-up: a fresh bench/startup.py process that loads the prepared data and runs the train
    stage to the end of its first step (training.members=1 max_steps=1, no validation, no guided
    alignment: its links are computed once per prepared folder and cached, not at each start): the
    seconds from process start and the process's RSS then (its RSS after the imports, before any
    data, is printed once).
Targets: start-up ≤ 30 s; training RSS growth from the real corpus to 2.7M lines ≤ 300 MB;
prepare peak RSS at 2.7M ≤ 2 GB. A benchmark prints figures; it never asserts them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLL_SECONDS = 0.2


def timed_prepare(config: str, corpus: str, prepared_dir: str, workers: int) -> float:
    command = [sys.executable, str(REPO / "scripts" / "prepare.py"), config, f"data.corpus={corpus}",
               f"data.prepared_dir={prepared_dir}", f"data.workers={workers}"]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"prepare failed:\n{result.stderr}")
    return seconds


# --- synthetic corpora -------------------------------------------------------------------------

def read_pairs(corpus: Path) -> list[tuple[str, str]]:
    """The (English, Chinese) pairs of a Tatoeba TSV: lines with two non-empty first columns."""
    pairs = []
    with open(corpus, encoding="utf-8-sig", errors="replace", newline="") as lines:
        for line in lines:
            columns = line.rstrip("\r\n").split("\t")
            if len(columns) >= 2 and columns[0].strip() and columns[1].strip():
                pairs.append((columns[0].strip(), columns[1].strip()))
    if not pairs:
        sys.exit(f"error: {corpus} holds no English<TAB>Chinese pairs")
    return pairs


def make_synthetic(pairs: list[tuple[str, str]], lines: int, path: Path, seed: int = 0) -> Path:
    """Write `lines` TSV lines to `path`, each joining 1–3 random `pairs` (English sides with a
    space, Chinese sides with nothing), with a third column saying which pairs it joins.

    Streaming: memory does not grow with `lines`. The same pairs, lines and seed give the same
    file byte for byte."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", encoding="utf-8", newline="\n") as out:
        chunk = []
        for _ in range(lines):
            chosen = [rng.randrange(len(pairs)) for _ in range(rng.randint(1, 3))]
            en = " ".join(pairs[i][0] for i in chosen)
            zh = "".join(pairs[i][1] for i in chosen)
            chunk.append(f"{en}\t{zh}\tsynthetic: pairs {'+'.join(str(i + 1) for i in chosen)}\n")
            if len(chunk) == 10_000:
                out.writelines(chunk)
                chunk.clear()
        out.writelines(chunk)
    partial.replace(path)
    return path


# --- memory of a process tree -----------------------------------------------------------------

def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _descendants(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(parents.get(pid, []))
    return tree


class TreeMemory:
    """Polls VmRSS of a process and its descendants every POLL_SECONDS (Linux /proc)."""

    def __init__(self, pid: int):
        self.pid, self.tree_kb, self.proc_kb = pid, 0, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.done.is_set():
            tree = _descendants(self.pid)
            self.tree_kb = max(self.tree_kb, sum(_status_kb(p, "VmRSS") for p in tree))
            self.proc_kb = max([self.proc_kb] + [_status_kb(p, "VmHWM") for p in tree])
            self.done.wait(POLL_SECONDS)

    def stop(self) -> tuple[float, float]:
        """(peak sum over the tree, peak single process) in MB."""
        self.done.set()
        self.thread.join()
        return self.tree_kb / 1024, self.proc_kb / 1024


def run_measured(command: list[str], env: dict | None = None) -> tuple[float, float, float, str]:
    """Run `command` in the repository; (seconds, peak tree MB, peak process MB, stdout)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    memory = TreeMemory(process.pid)
    stdout, stderr = process.communicate()
    seconds = time.perf_counter() - start
    tree_mb, proc_mb = memory.stop()
    if process.returncode != 0:
        sys.exit(f"{Path(command[1]).name} failed:\n{stderr[-4000:]}")
    return seconds, tree_mb, proc_mb, stdout


def measure(config: str, corpus: Path, work: Path, workers: int) -> dict:
    """Prepare `corpus` cold and start training on it, each in a fresh process."""
    prepared_dir, runs_dir = work / "prepared", work / "runs"
    data = [f"data.corpus={corpus}", f"data.prepared_dir={prepared_dir}", f"data.workers={workers}"]
    seconds, tree_mb, proc_mb, _ = run_measured(
        [sys.executable, str(REPO / "scripts" / "prepare.py"), config, *data])
    manifest = json.loads(next(prepared_dir.glob("*/manifest.json")).read_text(encoding="utf-8"))
    # guided_alignment=0: its links are a one-off eflomal run cached in the prepared folder (9.5 s
    # at 27k pairs, far longer at millions), not the start-up each later run pays
    training = ["training.members=1", "training.max_steps=1", "training.validate_every=1000000",
                "training.guided_alignment=0",
                f"name=startup_{corpus.stem}", f"runs_dir={runs_dir}"]
    env = dict(os.environ, BENCH_T0=repr(time.time()))
    *_, stdout = run_measured([sys.executable, str(REPO / "bench" / "startup.py"), config, *data,
                               *training], env)
    counts = manifest.get("counts", {})
    return {"lines": counts.get("lines_read"), "pairs": counts.get("pairs_kept"),
            "prepare_seconds": seconds, "prepare_tree_mb": tree_mb, "prepare_proc_mb": proc_mb,
            "startup": json.loads(stdout.strip().splitlines()[-1])}


def synthetic(args: argparse.Namespace, corpus: Path) -> None:
    workers = args.workers[0]
    with tempfile.TemporaryDirectory(prefix="bench_prepare_") as temporary:
        folder = Path(args.keep).resolve() if args.keep else Path(temporary)
        corpora = [("real", corpus)]
        pairs = read_pairs(corpus)
        for lines in args.synthetic:
            start = time.perf_counter()
            path = make_synthetic(pairs, lines, folder / f"synthetic_{lines}_seed{args.seed}.tsv",
                                  args.seed)
            print(f"made {path} ({lines} lines, {path.stat().st_size / 1e6:.0f} MB) in "
                  f"{time.perf_counter() - start:.1f} s", flush=True)
            corpora.append((f"{lines:,}", path))
        rows = []
        for label, path in corpora:
            row = measure(args.config, path, folder / f"work_{path.stem}", workers)
            rows.append((label, row))
            up = row["startup"]
            print(f"{label}: prepare {row['prepare_seconds']:.1f} s; start-up "
                  f"{up['seconds_to_first_step']:.1f} s, phases {up['seconds']}", flush=True)
    print_table(rows, workers)


def print_table(rows: list[tuple[str, dict]], workers: int) -> None:
    print(f"\nprepare: data.workers={workers}, cold; peak RSS polled every {POLL_SECONDS} s from "
          f"/proc over the process tree (tree: largest sum; proc: largest single VmHWM)")
    print(f"start-up: RSS after imports, before data: {rows[0][1]['startup']['rss_mb_before_data']:.0f}"
          f" MB; dtype {rows[0][1]['startup']['dtype']}, {rows[0][1]['startup']['torch_threads']} "
          f"torch thread(s)")
    header = (f"{'corpus':>10} {'lines':>10} {'pairs kept':>10} {'train pairs':>11} {'prepare s':>9} "
              f"{'prep tree MB':>12} {'prep proc MB':>12} {'start-up s':>10} {'train RSS MB':>12}")
    print(header)
    print("-" * len(header))
    for label, row in rows:
        up = row["startup"]
        print(f"{label:>10} {row['lines'] or 0:>10,} {row['pairs'] or 0:>10,} {up['train_pairs']:>11,} "
              f"{row['prepare_seconds']:>9.1f} {row['prepare_tree_mb']:>12.0f} "
              f"{row['prepare_proc_mb']:>12.0f} {up['seconds_to_first_step']:>10.1f} "
              f"{up['rss_mb_at_first_step']:>12.0f}")
    first, last = rows[0][1], rows[-1][1]
    growth = last["startup"]["rss_mb_at_first_step"] - first["startup"]["rss_mb_at_first_step"]
    print(f"training RSS growth {rows[0][0]} → {rows[-1][0]}: {growth:+.0f} MB  [targets: growth to "
          f"2.7M ≤ 300 MB, start-up ≤ 30 s, prepare peak at 2.7M ≤ 2,048 MB]")


def cached(args: argparse.Namespace, corpus: Path) -> None:
    for workers in args.workers:
        with tempfile.TemporaryDirectory(prefix="bench_prepare_") as prepared_dir:
            cold = timed_prepare(args.config, str(corpus), prepared_dir, workers)
            again = timed_prepare(args.config, str(corpus), prepared_dir, workers)
            manifest = json.loads(next(Path(prepared_dir).glob("*/manifest.json")).read_text())
        print(f"workers={workers}: cold {cold:.2f} s (prepare itself {manifest['elapsed_seconds']}"
              f" s), cached {again:.2f} s  [targets: cold < 10 s, cached < 1 s]")
    print(f"pairs kept {manifest['counts']['pairs_kept']}, splits {manifest['splits']}, "
          f"vocab {manifest['vocab']}, dev OOV {manifest['dev_oov_rate']}")


def machine_line(config_path: str) -> str:
    from nmt.config.loader import load_config
    from nmt.runtime import cpu_model, pick_device, set_threads, use_bf16

    training = load_config(config_path).training
    threads = set_threads(training.threads)  # what a train process of one model would use
    bf16 = use_bf16(training.bf16, pick_device(training.device))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"machine: {cpu_model()}, {cores} cores usable (nproc), torch threads {threads}, dtype "
            f"{'bfloat16' if bf16 else 'float32'}, load average {load}")


def _existing(path: str) -> Path:
    """`path` from the current folder, else from the repository (the default paths)."""
    return (Path(path) if Path(path).exists() else REPO / path).resolve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default="data/raw/cmn-eng/cmn.txt")
    parser.add_argument("--config", default="configs/tatoeba.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1],
                        help="data.workers; with --synthetic only the first is measured")
    parser.add_argument("--synthetic", type=int, nargs="+", metavar="N",
                        help="also measure corpora of N lines made from CORPUS (prepare time and "
                             "peak RSS, training start-up and RSS)")
    parser.add_argument("--keep", metavar="DIR", help="with --synthetic: write the corpora and "
                        "their prepared data under DIR and keep them (default: a temporary folder)")
    parser.add_argument("--seed", type=int, default=0, help="the synthetic corpora's seed")
    args = parser.parse_args()
    corpus, config = (_existing(path) for path in (args.corpus, args.config))
    args.config = str(config)  # the processes run in the repository
    if not corpus.is_file():
        sys.exit(f"error: {corpus} not found; run `make data` or pass the corpus path")
    if args.synthetic and min(args.synthetic) < 1:
        sys.exit("error: --synthetic sizes must be positive line counts")

    print(machine_line(args.config))
    print(f"python {platform.python_version()}, config {args.config}, corpus {corpus} "
          f"({corpus.stat().st_size / 1e6:.1f} MB)", flush=True)
    if args.synthetic:
        synthetic(args, corpus)
    else:
        cached(args, corpus)


if __name__ == "__main__":
    main()
