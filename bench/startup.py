"""How long the train stage takes to start: from process start to the end of its first step.

    python bench/startup.py CONFIG [key=value ...]

Run by bench/bench_prepare.py as a fresh process, after the data is prepared (it is loaded, never
prepared here). Does what nmt/training/loop.py train_one does up to the first step of
Trainer.run_epoch (one model, no torchrun), then stops, and prints one line of JSON:

    {"seconds_to_first_step", "rss_mb_before_data" (after the imports), "rss_mb_at_first_step",
     "seconds": {each phase}, "train_pairs", "batches", "resumed_at_step" (0: a fresh model;
     a trained run goes on from its last.pt), "threads", "dtype"}

Seconds count from the process's start: $BENCH_T0 (time.time() of the parent just before it
started this process) when set, else the start time Linux records for the process.
"""

from __future__ import annotations

import os
import sys
import time

T0 = float(os.environ["BENCH_T0"]) if os.environ.get("BENCH_T0") else None

import json  # noqa: E402  (after T0: the clock starts as early as it can)
import logging  # noqa: E402
from pathlib import Path  # noqa: E402

import torch  # noqa: E402

from nmt.config.loader import load_config  # noqa: E402
from nmt.data.batching import make_batches  # noqa: E402
from nmt.data.prepare import load_prepared  # noqa: E402
from nmt.runtime import seed_everything  # noqa: E402
from nmt.training.setup import load_training_data, open_run_dir, start_processes  # noqa: E402
from nmt.training.trainer import Clock, Trainer  # noqa: E402


def process_start() -> float:
    """time.time() at which this process started (Linux: /proc/self/stat), else now."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return time.time() - uptime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time()


def rss_mb() -> float:
    """This process's resident memory now (VmRSS), in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def first_step(config, start: float) -> dict:
    """train_one's order (nmt/training/loop.py) up to one train_step on the first batch; the
    time since `start` and the memory are read as that step ends.

    The only glue that knows the training API: keep it in step with train_one and run_epoch."""
    seconds, mark = {}, [time.perf_counter()]

    def phase(name: str) -> None:
        now = time.perf_counter()
        seconds[name] = round(now - mark[0], 3)
        mark[0] = now

    distributed, device, threads = start_processes(config.training)
    seed_everything(config.seed + distributed.rank)
    prepared = load_prepared(config)
    run_dir = open_run_dir(config, distributed, None)
    phase("setup")
    data = load_training_data(config, prepared)
    phase("load_training_data")
    trainer = Trainer(config, data, run_dir, distributed, device)
    trainer.resume_or_initialise()  # a trained run goes on from its last.pt
    resumed_at = trainer.progress.step
    phase("build_model")
    trainer.start(threads)  # guided alignment (eflomal) runs here with training.guided_alignment
    phase("trainer_start")
    trainer.clock = Clock()  # what Trainer.run sets before its epochs
    trainer.trained.train()
    batches = make_batches(data.train_examples, config.training.batch_tokens, config.seed,
                           trainer.progress.epoch)
    phase("make_batches")
    if trainer.train_step(batches[0]) is None:
        raise SystemExit("startup: the first batch's loss was not finite")
    phase("first_step")
    result = {"seconds_to_first_step": round(time.time() - start, 3),
              "rss_mb_at_first_step": round(rss_mb(), 1), "seconds": seconds,
              "train_pairs": len(data.train_examples), "batches": len(batches),
              "resumed_at_step": resumed_at, "threads": threads,
              "dtype": "bfloat16" if trainer.bf16 else "float32"}
    trainer.board.close()
    del trainer
    distributed.close()
    return result


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    start = T0 if T0 is not None else process_start()
    before_data, imported = rss_mb(), time.time()
    config = load_config(sys.argv[1], sys.argv[2:])
    result = first_step(config, start)
    result["seconds"] = {"interpreter_and_imports": round(imported - start, 3), **result["seconds"]}
    result["rss_mb_before_data"] = round(before_data, 1)
    result["torch_threads"] = torch.get_num_threads()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
