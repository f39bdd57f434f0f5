"""The run's own search settings are the server's defaults: a request that gives no beam or
n-best is decoded with the run's decoding plan's (tuned where make tune ran), and says so; the
page asks the run for them instead of a number written into it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from helpers import REPO
from random_checkpoint import single_thread, write_random_run
from nmt.serve.app import create_app

STATIC = REPO / "nmt" / "serve" / "static"


@pytest.fixture
def client(registry, smoke):
    """The registry's runs and "wide", a run whose saved search keeps 4 hypotheses and returns 3."""
    write_random_run(registry.runs_dir, "wide",
                     replace(smoke, search=replace(smoke.search, beam_size=4, n_best=3)))
    with single_thread():
        yield TestClient(create_app(registry), raise_server_exceptions=False)


@pytest.mark.parametrize("send", [
    lambda client: client.get("/api/translate", params={"text": "汤姆喜欢猫。", "run": "wide"}),
    lambda client: client.post("/api/translate", json={"lines": ["汤姆喜欢猫。"], "run": "wide"})])
def test_a_request_without_beam_or_nbest_gets_the_runs_own(client, registry, send):
    answer = send(client)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    search = registry.get("wide").translator.search
    assert (search.beam_size, search.n_best) == (4, 3)  # the run's saved config, not a default
    assert body["search"] == {"beam": 4, "nbest": 3} and not body["warnings"]
    assert len(body["lines"][0]["nbest"]) == 3
    assert client.get("/api/runs/wide").json()["search"] == {"beam": 4, "nbest": 3}


def test_a_request_that_gives_them_gets_its_own(client):
    body = client.post("/api/translate", json={"lines": ["汤姆喜欢猫。"], "run": "wide",
                                               "beam": 2, "nbest": 1}).json()
    assert body["search"] == {"beam": 2, "nbest": 1} and len(body["lines"][0]["nbest"]) == 1


def test_each_run_has_its_own_defaults(client, registry):
    own = registry.get("rnn").translator.search
    assert client.get("/api/runs/rnn").json()["search"] == {"beam": own.beam_size, "nbest": own.n_best}
    assert client.get("/api/translate", params={"text": "猫"}).json()["search"] == \
        {"beam": own.beam_size, "nbest": own.n_best}


def test_the_page_and_the_api_declare_no_beam_of_their_own(client):
    api = client.get("/openapi.json").json()
    body = api["components"]["schemas"]["TranslateBatch"]["properties"]
    assert body["beam"].get("default") is None and "default: the run's beam" in body["beam"]["description"]
    assert "default: the run's n-best" in body["nbest"]["description"]
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    assert 'id="beam"' in page and "value=" not in page.split('id="beam"')[1].split(">")[0]
    assert "/api/runs/" in (STATIC / "app.js").read_text(encoding="utf-8")  # it asks the run
