"""Admission before any thread pool: a request beyond the decoding queue's bound is answered
503 with Retry-After at once, even while every thread of the server's pool is taken (the
translate routes await the decoding thread instead of waiting in a pool thread)."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anyio.to_thread
import pytest
from fastapi.testclient import TestClient

import nmt.serve.runs
from random_checkpoint import single_thread
from nmt.config.serve_schema import ServeConfig
from nmt.decoding.translator import Translator
from nmt.serve.app import create_app

WAIT = 60  # seconds before a test that would hang fails instead (never reached when it passes)


class Gate:
    """Holds the first call that reaches it until `release`; `reached` says it is held."""

    def __init__(self):
        self.reached, self.release = threading.Event(), threading.Event()

    def hold(self) -> None:
        if not self.reached.is_set():
            self.reached.set()
            assert self.release.wait(WAIT)


@pytest.fixture
def app(registry, monkeypatch):
    """The app, with a queue of one line, once the default run is loaded; then the decoding
    thread's first search and the first load of another run are each held by a Gate (`gates`)."""
    app = create_app(registry, ServeConfig(queue_lines=1, deadline_seconds=WAIT))
    registry.get()
    search, load = Gate(), Gate()
    translate, from_plan = Translator.translate, Translator.from_plan

    def held_search(self, lines, *args, **kwargs):
        search.hold()
        return translate(self, lines, *args, **kwargs)

    def held_load(plan, keep_attention=True):
        load.hold()
        return from_plan(plan, keep_attention)

    monkeypatch.setattr(Translator, "translate", held_search)
    monkeypatch.setattr(nmt.serve.runs.Translator, "from_plan", held_load)
    app.state.gates = search, load
    yield app
    search.release.set()
    load.release.set()


def wait_until(condition) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "the server never got there"
        time.sleep(0.005)


def test_a_request_beyond_the_queue_is_refused_at_once_while_the_pool_is_full(registry, app):
    search, load = app.state.gates
    batcher = registry.get()
    with single_thread():
        with TestClient(app, raise_server_exceptions=False) as client, ThreadPoolExecutor(6) as pool:
            # the pool that FastAPI runs sync work in: one thread, which a load will hold
            limiter = client.portal.call(anyio.to_thread.current_default_thread_limiter)
            client.portal.call(setattr, limiter, "total_tokens", 1)

            first = pool.submit(client.post, "/api/translate", json={"lines": ["汤姆喜欢猫。"]})
            assert search.reached.wait(WAIT)  # decoding, held
            second = pool.submit(client.post, "/api/translate", json={"lines": ["玛丽喜欢狗。"]})
            wait_until(lambda: len(batcher._waiting) == 1)  # waits: 1 line of 1
            loading = pool.submit(client.get, "/api/runs/transformer")
            assert load.reached.wait(WAIT)  # the pool's one thread loads a run, held
            assert limiter.borrowed_tokens == 1

            refused = [pool.submit(client.post, "/api/translate", json={"lines": ["我喜欢书。"]}),
                       pool.submit(client.get, "/api/translate", params={"text": "我喜欢书。"})]
            for answer in (future.result(WAIT) for future in refused):
                assert answer.status_code == 503, answer.text
                assert "serve.queue_lines = 1" in answer.json()["error"]
                assert int(answer.headers["retry-after"]) >= 1
            assert not loading.done()  # answered while the pool was still full

            search.release.set()
            load.release.set()
            assert [f.result(WAIT).status_code for f in (first, second, loading)] == [200] * 3
