"""A bounded set of loaded runs (serve.max_runs): loading one more unloads the least recently
used run other than the default, whose decoding thread answers what it holds and stops; a
request for it later loads it again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from random_checkpoint import single_thread, write_random_run
from test_admission import WAIT, Gate, wait_until
from nmt.decoding.translator import Translator
from nmt.config.serve_schema import ServeConfig
from nmt.serve.app import create_app
from nmt.serve.batcher import Overloaded


@pytest.fixture
def client(registry, smoke):
    """Four runs (the default "rnn", "transformer", "a", "b"), at most three loaded at once."""
    for name in ("a", "b"):
        write_random_run(registry.runs_dir, name, smoke)
    with single_thread():
        yield TestClient(create_app(registry, ServeConfig(max_runs=3)), raise_server_exceptions=False)


def ask(client, run: str) -> None:
    answer = client.post("/api/translate", json={"lines": ["汤姆喜欢猫。"], "run": run})
    assert answer.status_code == 200, answer.text


def test_the_least_recently_used_run_other_than_the_default_is_unloaded(client, registry):
    for run in ("rnn", "transformer", "a"):
        ask(client, run)
    a, transformer = registry.loaded("a"), registry.loaded("transformer")
    ask(client, "a")  # now "transformer" is the least recently used but for the default
    ask(client, "b")
    assert list(registry._loaded) == ["rnn", "a", "b"]
    assert transformer is not None and a is registry._loaded["a"]  # (loaded() would use it)
    transformer._thread.join(30)
    assert not transformer._thread.is_alive()  # its decoding thread stopped
    with pytest.raises(Overloaded, match="unloaded to make room"):  # a request that held it
        transformer.translate(["猫"], 1, 1)

    ask(client, "transformer")  # loaded again, and "rnn" stays though used longest ago
    assert list(registry._loaded) == ["rnn", "b", "transformer"]
    assert registry.get() is registry.loaded("rnn")


def test_an_unloaded_run_answers_what_it_holds_then_its_thread_stops(client, registry, monkeypatch):
    ask(client, "rnn")
    ask(client, "transformer")
    gate, search = Gate(), Translator.translate

    def held(self, lines, *args, **kwargs):
        gate.hold()
        return search(self, lines, *args, **kwargs)

    monkeypatch.setattr(Translator, "translate", held)
    transformer = registry._loaded["transformer"]
    body = {"lines": ["汤姆喜欢猫。"], "run": "transformer"}
    with ThreadPoolExecutor(2) as pool:
        decoding = pool.submit(client.post, "/api/translate", json=body)
        assert gate.reached.wait(WAIT)
        waiting = pool.submit(client.post, "/api/translate", json=body)
        wait_until(lambda: len(transformer._waiting) == 1)
        ask(client, "a")
        ask(client, "b")  # unloads "transformer", which holds two requests
        assert "transformer" not in registry._loaded and transformer._thread.is_alive()
        gate.release.set()
        assert [f.result(WAIT).status_code for f in (decoding, waiting)] == [200, 200]
    transformer._thread.join(WAIT)
    assert not transformer._thread.is_alive()


def test_max_runs_is_a_config_key_of_at_least_two(tmp_path):
    from helpers import REPO
    from nmt.config.loader import load_config
    from nmt.errors import NMTError

    assert load_config(REPO / "configs" / "smoke.yaml", ["serve.max_runs=2"]).serve.max_runs == 2
    with pytest.raises(NMTError, match="max_runs"):
        load_config(REPO / "configs" / "smoke.yaml", ["serve.max_runs=1"])
