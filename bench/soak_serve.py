"""A bounded soak of `make serve`: does its memory stay flat, and is overload answered?

    python bench/soak_serve.py configs/tatoeba.yaml [overrides] [--sentences 1503] [--clients 4]
                               [--burst 32] [--repo DIR --server-config FILE]

Starts `scripts/serve.py CONFIG` as a server process on a free port of 127.0.0.1 (of this
checkout, or of --repo DIR: another checkout, to measure before and after a change side by side)
and waits until /api/health says the model is loaded; one request says which models answer.
Then:

1. soak: every one of --sentences distinct sentences of the prepared test split (then dev) is
   sent once as GET /api/translate from --clients threads; twice over, the same sentences. The
   server's resident memory (VmRSS) is printed after loading and after each pass, with the
   latency percentiles and the failed requests of each pass.
2. burst: --burst clients at once, each sending --burst-requests requests: every request must get
   an answer or a 503 within its deadline (serve.deadline_seconds); the statuses and the slowest
   answer are printed.

Sends only to 127.0.0.1, a fixed number of requests, and stops the server with SIGTERM at the
end. Prints figures with the machine; asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's nmt, for the config and the prepared sentences

from nmt.cli import config_arguments, run_cli  # noqa: E402
from nmt.config.loader import load_config  # noqa: E402
from nmt.data.prepare import load_prepared  # noqa: E402
from nmt.io import read_lines  # noqa: E402
from nmt.runtime import cpu_model  # noqa: E402


def rss_mb(pid: int) -> float:
    """The process's resident memory in MB (VmRSS of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    repo = Path(args.repo or REPO)
    config = Path(args.server_config or args.config).resolve()
    command = [sys.executable, str(repo / "scripts" / "serve.py"), str(config), *args.overrides,
               "--port", str(port)]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    server = subprocess.Popen(command, cwd=Path.cwd(), env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 600
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                return server, url
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    server.kill()
    raise SystemExit(f"the server did not get ready: {' '.join(command)}")


def ask(client: httpx.Client, text: str) -> tuple[int, float]:
    """(status, seconds) of one GET /api/translate; 0 for a request that got no answer."""
    start = time.perf_counter()
    try:
        status = client.get("/api/translate", params={"text": text}).status_code
    except httpx.TransportError:
        status = 0
    return status, time.perf_counter() - start


def answered_by(url: str, text: str) -> str:
    """What the server translates with, as its answer to one request names it."""
    answer = httpx.get(f"{url}/api/translate", params={"text": text}, timeout=120)
    if answer.status_code != 200:
        raise SystemExit(f"the server's first answer: status {answer.status_code}: {answer.text[:300]}")
    return answer.json().get("model", "?")


def percentiles(seconds: list[float]) -> str:
    cuts = statistics.quantiles(seconds, n=100)
    return (f"p50 {1000 * cuts[49]:.0f} ms, p90 {1000 * cuts[89]:.0f} ms, "
            f"p99 {1000 * cuts[98]:.0f} ms, max {1000 * max(seconds):.0f} ms")


def soak(url: str, texts: list[str], clients: int, server: subprocess.Popen) -> None:
    with httpx.Client(base_url=url, timeout=120) as client, ThreadPoolExecutor(clients) as pool:
        for number in (1, 2):
            start = time.perf_counter()
            answers = list(pool.map(lambda text: ask(client, text), texts))
            seconds = time.perf_counter() - start
            failed = sum(status != 200 for status, _ in answers)
            print(f"pass {number}   RSS {rss_mb(server.pid):7.0f} MB after {len(texts)} sentences "
                  f"in {seconds:.0f} s; {failed} failed; {percentiles([s for _, s in answers])}")


def burst(url: str, text: str, clients: int, requests: int) -> None:
    with httpx.Client(base_url=url, timeout=120,
                      limits=httpx.Limits(max_connections=clients)) as client, \
            ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(lambda i: ask(client, f"{text}{i % 7}"), range(clients * requests)))
    statuses = collections.Counter(status for status, _ in answers)
    shown = ", ".join(f"{count} × {status or 'no answer'}" for status, count in sorted(statuses.items()))
    print(f"burst    {clients} clients, {len(answers)} requests: {shown}; "
          f"{percentiles([s for _, s in answers])}")


def main(args: argparse.Namespace) -> None:
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    config = load_config(args.config, args.overrides)
    prepared = load_prepared(config)
    texts = list(dict.fromkeys(read_lines(prepared.text("test", "zh"))
                               + read_lines(prepared.text("dev", "zh"))))[: args.sentences]
    started = time.perf_counter()
    server, url = start_server(args)
    print(f"machine  {cpu_model()}, {os.cpu_count()} CPUs; server {args.repo or REPO}, "
          f"deadline {config.serve.deadline_seconds:g} s, queue {config.serve.queue_lines} lines")
    print(f"loaded   RSS {rss_mb(server.pid):7.0f} MB, ready {time.perf_counter() - started:.0f} s "
          f"after start")
    try:
        print(f"model    {answered_by(url, texts[0])}")
        soak(url, texts, args.clients, server)
        if args.burst:
            burst(url, texts[0], args.burst, args.burst_requests)
    finally:
        server.send_signal(signal.SIGTERM)
        print(f"stopped  exit status {server.wait(60)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    config_arguments(parser)
    parser.add_argument("--sentences", type=int, default=1503, help="distinct sentences a pass")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients of the soak")
    parser.add_argument("--burst", type=int, default=32, help="clients of the burst (0: none)")
    parser.add_argument("--burst-requests", type=int, default=4, help="requests per burst client")
    parser.add_argument("--repo", help="the checkout whose scripts/serve.py serves (default: this one)")
    parser.add_argument("--server-config", help="the config the server reads (default CONFIG): "
                                                "another checkout's may need its own")
    run_cli(main, parser)
