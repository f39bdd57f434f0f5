"""The web API's speed: a bounded load test of `make serve` on the loopback address only.

    python bench/bench_serve.py configs/tatoeba.yaml [overrides] [--requests 200] [--clients 8]

Starts the app (nmt/serve/app.py) on a free port of 127.0.0.1 with the config's run, waits until
it has loaded the model, then sends single-sentence translate requests (dev sentences of the
prepared data, or a fixed list without it): first one at a time (the median latency), then from
`--clients` threads at once (requests/s). It sends exactly `--requests` requests in each phase
and stops by itself. Then, where Chromium and Playwright are installed, the page itself: how
long after it is ready (loaded, runs listed) a click on Translate takes to show the translation.
Targets (issue 22): ≤ 50 ms median, ≥ 50 requests/s with 8 clients, the page's first
translation ≤ 1 s after ready. Prints figures with the machine; asserts nothing.
"""

from nmt.cli import sleep_while_waiting

sleep_while_waiting()  # before anything imports torch

import argparse
import logging
import os
import shutil
import socket
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import torch
import uvicorn

from nmt.cli import config_arguments, run_cli
from nmt.config.loader import load_config
from nmt.data.prepare import load_prepared
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.runtime import cpu_model, set_threads
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry

# As in tests/serve/test_browser.py: Debian's Chromium, headless, off the network.
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FALLBACK = ["汤姆喜欢猫。", "我们明天去公园吧。", "你会说中文吗？", "这本书很有意思。"]


def sentences(config) -> list[str]:
    try:
        return read_lines(load_prepared(config).text("dev", "zh"))[:200]
    except NMTError:
        return FALLBACK


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


def main(args: argparse.Namespace) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    config = load_config(args.config, args.overrides)
    threads = set_threads(config.training.threads)
    registry = RunRegistry(config.runs_dir, config.name, device="cpu")
    started = time.perf_counter()
    registry.get()
    loaded = time.perf_counter() - started
    server, url = start_server(registry)
    texts = sentences(config)
    with httpx.Client(base_url=url, timeout=60) as client:
        def ask(i: int) -> float:
            start = time.perf_counter()
            answer = client.get("/api/translate", params={"text": texts[i % len(texts)],
                                                          "beam": args.beam})
            answer.raise_for_status()
            return time.perf_counter() - start

        ask(0)  # warm-up
        latencies = [ask(i) for i in range(args.requests)]
        start = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            list(pool.map(ask, range(args.requests)))
        concurrent = time.perf_counter() - start
    page = page_seconds(url, texts[0])
    server.should_exit = True
    print(f"machine   {cpu_model()}, {threads} torch threads, torch {torch.__version__}, float32")
    print(f"model     runs/{config.name} loaded in {loaded:.1f} s; beam {args.beam}, "
          f"{len(texts)} distinct sentences")
    print(f"one at a time   median {1000 * statistics.median(latencies):.1f} ms, "
          f"p90 {1000 * statistics.quantiles(latencies, n=10)[-1]:.1f} ms over {args.requests} requests")
    print(f"{args.clients} clients       {args.requests / concurrent:.1f} requests/s "
          f"({args.requests} requests in {concurrent:.1f} s)")
    if page is None:
        print("page            not measured: no Chromium or Playwright here")
    else:
        print(f"page            loaded in {1000 * page[0]:.0f} ms; "
              f"first translation {1000 * page[1]:.0f} ms after ready")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--requests", type=int, default=200, help="requests per phase (default 200)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--beam", type=int, default=5, help="beam size of each request (default 5)")
    run_cli(main, parser)
