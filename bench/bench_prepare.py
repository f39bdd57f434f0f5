"""How long the prepare stage takes on the real corpus: cold (an empty prepared_dir) and cached.

    python bench/bench_prepare.py [CORPUS] [--config configs/tatoeba.yaml] [--workers 1 2]

Each measurement is a fresh `python scripts/prepare.py` process, timed from start to exit, so it
includes interpreter start-up and imports, as a user sees it. Targets: < 10 s cold on 2 cores,
< 1 s cached.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from nmt.runtime import cpu_model
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed_prepare(config: str, corpus: str, prepared_dir: str, workers: int) -> float:
    command = [sys.executable, str(REPO / "scripts" / "prepare.py"), config, f"data.corpus={corpus}",
               f"data.prepared_dir={prepared_dir}", f"data.workers={workers}"]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"prepare failed:\n{result.stderr}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", nargs="?", default="data/raw/cmn-eng/cmn.txt")
    parser.add_argument("--config", default="configs/tatoeba.yaml")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 1])
    args = parser.parse_args()
    corpus = Path(args.corpus).resolve()
    if not corpus.is_file():
        sys.exit(f"error: {corpus} not found; run `make data` or pass the corpus path")

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"machine: {cores} cores usable (nproc), {cpu_model()}, load average {load}")
    print(f"python {platform.python_version()}, corpus {corpus} "
          f"({corpus.stat().st_size / 1e6:.1f} MB)")
    for workers in args.workers:
        with tempfile.TemporaryDirectory(prefix="bench_prepare_") as prepared_dir:
            cold = timed_prepare(args.config, str(corpus), prepared_dir, workers)
            cached = timed_prepare(args.config, str(corpus), prepared_dir, workers)
            manifest = json.loads(next(Path(prepared_dir).glob("*/manifest.json")).read_text())
        print(f"workers={workers}: cold {cold:.2f} s (prepare itself {manifest['elapsed_seconds']}"
              f" s), cached {cached:.2f} s  [targets: cold < 10 s, cached < 1 s]")
    print(f"pairs kept {manifest['counts']['pairs_kept']}, splits {manifest['splits']}, "
          f"vocab {manifest['vocab']}, dev OOV {manifest['dev_oov_rate']}")


if __name__ == "__main__":
    main()
