"""The web API's speed: a bounded load test of `make serve` on the loopback address only.

    python bench/bench_serve.py configs/tatoeba.yaml [overrides] [--requests 200] [--clients 8]
    python bench/bench_serve.py configs/tatoeba_student.yaml --record   # runs/<name>/serving.<label>.json

Starts the app (nmt/serve/app.py) on a free port of 127.0.0.1 with the config's run, decoded as
`make serve` decodes it (the config and overrides given: nmt/decoding/plan.py), on the CPU; waits
until it has loaded the model, then sends single-sentence translate requests (dev sentences of the
prepared data, or a fixed list without it): first one at a time (the median latency), then from
`--clients` threads at once (requests/s: the requests answered with 200 per second; the others
are counted as failed). It sends exactly `--requests` requests in each phase and stops by itself.
Then, where Chromium and Playwright are installed, the page itself: how long after it is ready
(loaded, runs listed) a click on Translate takes to show the translation.
Targets (issue 22): ≤ 50 ms median, ≥ 50 requests/s with 8 clients, the page's first
translation ≤ 1 s after ready. Prints figures with the machine; asserts nothing.

Size and memory. `disk MB`: the files the plan decodes with, as they lie on disk (an engine's
whole export folder; else its checkpoints and rescoring models: a best.pt or last.pt also holds
what only resuming training needs, an average does not). Memory is this process's, in MB (2^20
bytes): the server runs in it, in a thread, so it is the server (Python, torch, the models,
uvicorn) plus a small httpx client and its threads, a few MB of the figure. `before the model`:
VmRSS with the code imported and no model loaded (what any run's server needs); `loaded`: VmRSS once
the model is loaded and the server listens, before any request; `peak`: VmHWM after the load
test, the most the process ever held (loading included, as in `make serve`'s process).

`--record` also writes these figures to runs/<name>/serving.<label>.json, the label of the
plan's results file (results.<label>.json; "best" for the run's own results.json), where
`make docs` puts them beside the BLEU and the `make eval` speed of that row (docs/results.md,
table "Serving").
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import dataclasses
import logging
import os
import shutil
import socket
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import torch
import uvicorn

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import PreparedData, load_prepared
from nmt.decoding.plan import DecodingPlan, plan_for
from nmt.errors import NMTError
from nmt.io import atomic_write_json, read_lines
from nmt.runtime import cpu_model, set_threads
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry

# As in tests/serve/test_browser.py: Debian's Chromium, headless, off the network.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FALLBACK = ["汤姆喜欢猫。", "我们明天去公园吧。", "你会说中文吗？", "这本书很有意思。"]
MB = 2 ** 20


def sentences(config) -> list[str]:
    """The first 200 dev sentences of the prepared data; a fixed list, said on stderr, only
    where the data is not prepared at all (a damaged prepared folder is an error)."""
    if not PreparedData(Path(config.data.prepared_dir) / config.data_hash()).manifest_path.is_file():
        print(f"the data of {config.name} is not prepared: sending {len(FALLBACK)} fixed sentences",
              file=sys.stderr)
        return FALLBACK
    return read_lines(load_prepared(config).text("dev", "zh"))[:200]


def models(plan: DecodingPlan) -> str:
    """The files the plan decodes with: its engine's export folder, else its checkpoints and
    its rescoring models."""
    if plan.engine is not None:
        return str(plan.engine)
    rescored = [str(model.path) for model in plan.rescoring]
    return ", ".join(map(str, plan.checkpoints)) + (f" rescored by {', '.join(rescored)}"
                                                     if rescored else "")


def status_mb(field: str, status: Path = Path("/proc/self/status")) -> float | None:
    """A memory figure of this process in MB: "VmRSS" (resident now) or "VmHWM" (its peak);
    None where /proc does not say (not Linux)."""
    try:
        lines = status.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)  # kB
    return None


def disk_mb(plan: DecodingPlan) -> float:
    """The size on disk, in MB, of what `plan` decodes with: its engine's export folder (every
    file in it), else its checkpoints and its rescoring models, each file once."""
    if plan.engine is not None:
        files = [path for path in Path(plan.engine).rglob("*") if path.is_file()]
    else:
        files = list(dict.fromkeys([*plan.checkpoints, *(model.path for model in plan.rescoring)]))
    return sum(Path(path).stat().st_size for path in files) / MB


def decoder(plan: DecodingPlan) -> str:
    """What decodes: the engine and its quantization, or PyTorch and its dtype."""
    if plan.engine is not None:
        return f"{plan.config.export.engine} {plan.config.export.quantization} ({plan.engine.name})"
    return f"PyTorch {'bfloat16' if plan.search.bf16 else 'float32'}"


def start_server(registry: RunRegistry) -> tuple[uvicorn.Server, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(registry), host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port}"


def page_seconds(url: str, text: str) -> tuple[float, float] | None:
    """(seconds to load the page until its runs are listed, seconds from a click on Translate
    to the translation on screen) in headless Chromium; None without Chromium or Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not os.path.isfile(CHROMIUM):
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            start = time.perf_counter()
            page.goto(url)
            page.wait_for_selector("#run option", state="attached")
            ready = time.perf_counter()
            page.fill("#text", text)
            page.click("#go")
            page.wait_for_selector(".translation")
            return ready - start, time.perf_counter() - ready
        finally:
            browser.close()


def load_test(url: str, texts: list[str], args: argparse.Namespace) -> dict:
    """One request at a time (a failure stops the bench: the server is broken), then from
    `args.clients` threads at once, counting the requests that raised or were not answered 200."""
    with httpx.Client(base_url=url, timeout=60) as client:
        def ask(i: int) -> float:
            start = time.perf_counter()
            answer = client.get("/api/translate", params={"text": texts[i % len(texts)],
                                                          "beam": args.beam})
            if answer.status_code != 200:
                raise NMTError(f"request {i}: status {answer.status_code}: {answer.text[:200]}")
            return time.perf_counter() - start

        def answered(i: int) -> bool:
            try:
                ask(i)
            except Exception:  # noqa: BLE001 (any failure of a request counts as one)
                return False
            return True

        ask(0)  # warm-up
        latencies = [ask(i) for i in range(args.requests)]
        start = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            ok = sum(pool.map(answered, range(args.requests)))
        seconds = time.perf_counter() - start
    return {"requests_per_second": round(ok / seconds, 2), "clients": args.clients,
            "requests": args.requests, "failed": args.requests - ok, "seconds": round(seconds, 2),
            "median_ms": round(1000 * statistics.median(latencies), 2),
            "p90_ms": round(1000 * statistics.quantiles(latencies, n=10)[-1], 2)}


def load(config, overrides: list[str]) -> tuple[RunRegistry, DecodingPlan, float]:
    """The registry with the run loaded as `make serve` decodes it (on the CPU), its plan, and
    the seconds loading took."""
    config = dataclasses.replace(config, training=dataclasses.replace(config.training, device="cpu"))
    started = time.perf_counter()
    trained = (config.run_dir / "config.yaml").is_file()  # else: the registry says what is missing
    registry = RunRegistry(config.runs_dir, config.name, device="cpu",
                           default_plan=plan_for(config, overrides) if trained else None)
    plan = registry.get().translator.plan  # never .model: an engine's translator has none
    return registry, plan, time.perf_counter() - started


def print_figures(figures: dict, args: argparse.Namespace, texts: list[str], loaded: float) -> None:
    print(f"machine   {figures['machine']}, {figures['threads']} torch threads, "
          f"torch {torch.__version__}, {figures['decoder']}")
    print(f"model     runs/{figures['run']} ({figures['label']}: {figures['models']}) loaded in "
          f"{loaded:.1f} s; beam {args.beam}, {len(texts)} distinct sentences")
    print(f"one at a time   median {figures['median_ms']:.1f} ms, p90 {figures['p90_ms']:.1f} ms "
          f"over {args.requests} requests")
    print(f"{args.clients} clients       {figures['requests_per_second']:.1f} requests/s "
          f"({args.requests} requests in {figures['seconds']:.1f} s, {figures['failed']} failed)")
    memory = " ".join(f"{name} {'-' if value is None else f'{value:.0f} MB'}" for name, value in
                      (("before the model", figures["rss_mb_before"]),
                       ("loaded", figures["rss_mb_loaded"]), ("peak", figures["rss_mb_peak"])))
    print(f"size            {figures['disk_mb']:.1f} MB on disk; memory (server + client) {memory}")


def main(args: argparse.Namespace) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    rss_before = status_mb("VmRSS")  # Python, torch and the server's code, no model yet
    registry, plan, loaded = load(config, args.overrides)
    server, url = start_server(registry)
    rss_loaded = status_mb("VmRSS")
    texts = sentences(config)
    measured = load_test(url, texts, args)
    rss_peak = status_mb("VmHWM")  # after the load test, before the page's (other processes)
    figures = {"run": config.name, "label": plan.label or "best", "models": models(plan),
               "machine": cpu_model(), "threads": threads, "decoder": decoder(plan),
               "beam": args.beam, **measured,
               "rss_mb_before": rss_before, "rss_mb_loaded": rss_loaded, "rss_mb_peak": rss_peak,
               "disk_mb": round(disk_mb(plan), 2)}
    page = page_seconds(url, texts[0])
    server.should_exit = True
    print_figures(figures, args, texts, loaded)
    if page is None:
        print("page            not measured: no Chromium or Playwright here")
    else:
        print(f"page            loaded in {1000 * page[0]:.0f} ms; "
              f"first translation {1000 * page[1]:.0f} ms after ready")
    if args.record:
        path = config.run_dir / f"serving.{figures['label']}.json"
        atomic_write_json(path, figures)
        print(f"recorded        {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--requests", type=int, default=200, help="requests per phase (default 200)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--beam", type=int, default=5, help="beam size of each request (default 5)")
    parser.add_argument("--record", action="store_true",
                        help="also write the figures to runs/<name>/serving.<label>.json "
                             "(make docs shows them in docs/results.md's Serving table)")
    run_cli(main, parser)
