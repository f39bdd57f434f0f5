"""A server's life: ready only once its models are loaded, busy said with 503 and Retry-After,
and on SIGTERM every request it holds answered before it exits."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

import nmt.serve.runs
from helpers import REPO
from random_checkpoint import single_thread, write_random_run
from test_script import free_port
from nmt.config.serve_schema import ServeConfig
from nmt.decoding.translator import Translator
from nmt.serve.app import create_app
from nmt.serve.batcher import Overloaded


def test_health_says_ready_only_once_the_default_run_is_loaded(registry, monkeypatch):
    release, real = threading.Event(), Translator.from_plan

    def slow_load(plan, keep_attention=True):
        release.wait(10)
        return real(plan, keep_attention)

    monkeypatch.setattr(nmt.serve.runs.Translator, "from_plan", slow_load)
    with single_thread(), TestClient(create_app(registry), raise_server_exceptions=False) as client:
        loading = client.get("/api/health")  # the server answers while the model loads
        assert loading.status_code == 503 and "loading the run rnn" in loading.json()["error"]
        assert int(loading.headers["retry-after"]) >= 1
        assert client.get("/api/translate", params={"text": "猫"}).status_code == 503
        release.set()
        deadline = time.monotonic() + 30
        while client.get("/api/health").status_code != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert client.get("/api/health").json() == {"ok": True, "run": "rnn"}
        assert client.get("/api/translate", params={"text": "猫"}).status_code == 200


def test_a_busy_server_says_503_with_retry_after_and_the_limits_reach_its_batchers(registry,
                                                                                   monkeypatch):
    """The queue bound and the deadline themselves: tests/serve/test_batcher.py."""
    with single_thread():
        client = TestClient(create_app(registry, ServeConfig(queue_lines=3, deadline_seconds=4)),
                            raise_server_exceptions=False)
        batcher = registry.get()
        assert (batcher.limits.queue_lines, batcher.limits.deadline_seconds) == (3, 4)

        async def busy(lines, beam, nbest, asked=None):
            raise Overloaded("3 lines wait already; the queue would pass serve.queue_lines = 3", 7)

        monkeypatch.setattr(batcher, "answer", busy)  # what the async routes await
        for answer in (client.get("/api/translate", params={"text": "猫"}),
                       client.post("/api/translate", json={"lines": ["猫"]})):
            assert answer.status_code == 503 and answer.headers["retry-after"] == "7"
            assert "serve.queue_lines = 3" in answer.json()["error"]


@pytest.mark.e2e
def test_sigterm_answers_every_request_held_then_exits(tmp_path: Path, smoke):
    runs = tmp_path / "runs"
    write_random_run(runs, "smoke", smoke)
    port = free_port()
    server = subprocess.Popen([sys.executable, "scripts/serve.py", str(REPO / "configs" / "smoke.yaml"),
                               "training.threads=1", "--runs-dir", str(runs), "--port", str(port)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None and time.monotonic() < deadline, server.stdout.read()
            try:
                if httpx.get(f"{url}/api/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        body = {"lines": ["汤姆喜欢猫。玛丽喜欢狗。我喜欢书。"] * 64, "beam": 5}
        with ThreadPoolExecutor(4) as pool:
            held = [pool.submit(httpx.post, f"{url}/api/translate", json=body, timeout=60)
                    for _ in range(4)]
            time.sleep(1.0)  # the requests are in: the first decoding, the rest waiting
            server.send_signal(signal.SIGTERM)
            answers = [future.result() for future in held]
        assert [answer.status_code for answer in answers] == [200] * 4
        assert all(len(answer.json()["lines"]) == 64 for answer in answers)
        assert server.wait(30) == 0
        with pytest.raises(httpx.TransportError):  # and it takes no new request
            httpx.get(f"{url}/api/health", timeout=2)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(10)
