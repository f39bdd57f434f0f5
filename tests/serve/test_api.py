"""The JSON API: a good request's shape, and every bad one a 4xx JSON error, never a dead server."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient

from random_checkpoint import single_thread
from nmt.serve.app import BadRequest, create_app, parse_query


@pytest.fixture
def client(registry):
    with single_thread():
        yield TestClient(create_app(registry, max_chars=50), raise_server_exceptions=False)


def test_a_translation_with_its_attention_and_links(client):
    answer = client.get("/api/translate", params={"text": "汤姆喜欢猫。", "beam": 3, "nbest": 2})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["run"] == "rnn" and body["architecture"] == "rnn" and body["layers"] is None
    assert body["source_tokens"] == ["汤姆", "喜欢", "猫", "。"]
    assert isinstance(body["translation"], str) and len(body["nbest"]) == 2
    assert body["nbest"][0]["text"] == body["translation"]
    rows = body["attention"]
    assert len(rows) == len(body["target_tokens"]) and all(len(r) == 4 for r in rows)
    assert all(abs(sum(r) - 1) < 1e-2 for r in rows)  # each row a distribution over the source
    assert all(0 <= j < 4 and 0 <= i < len(rows) for j, i in body["links"])
    assert body["lines"][0]["translation"] == body["translation"]


def test_several_lines_and_a_transformer_with_every_layer_and_head(client):
    body = client.get("/api/translate", params={"text": "汤姆喜欢猫。\n\n玛丽喜欢狗。",
                                                "run": "transformer", "beam": 2}).json()
    assert body["architecture"] == "transformer" and len(body["lines"]) == 2
    layers = body["lines"][1]["layers"]  # (layers, heads, T, S): smoke has 1 layer of 2 heads
    assert len(layers) == 1 and len(layers[0]) == 2
    assert len(layers[0][0]) == len(body["lines"][1]["target_tokens"])


def test_runs_health_page_and_font(client):
    assert client.get("/api/runs").json() == {"runs": ["rnn", "transformer"], "default": "rnn"}
    assert client.get("/api/health").json()["ok"] is True
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text and "http" not in page.text.split("<body>")[0].replace("http-equiv", "")
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/font").status_code == 200  # the font the plots use, served locally


@pytest.mark.parametrize("query, status, says", [
    ("text=", 400, "empty"),
    ("text=%20%20", 400, "empty"),
    ("text=" + "猫" * 51, 400, "at most 50"),
    ("text=猫&beam=0", 400, "beam = 0"),
    ("text=猫&beam=1000", 400, "beam = 1000"),
    ("text=猫&beam=many", 400, "not a whole number"),
    ("text=猫&beam=2&nbest=3", 400, "nbest = 3"),
    ("text=猫&run=nosuchrun", 404, "no trained run"),
    ("text=猫&run=untrained", 404, "no trained run"),
    ("text=猫&run=../../etc", 404, "folder under runs/"),
    ("text=猫&run=..", 404, "folder under runs/"),
    ("text=猫&run=%2Fetc%2Fpasswd", 404, "folder under runs/"),
    ("text=%FF%FE", 400, "not valid UTF-8"),
])
def test_bad_requests_get_a_json_error(client, query, status, says):
    answer = client.get(f"/api/translate?{query}")
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]
    assert client.get("/api/health").status_code == 200  # and the server goes on


def test_concurrent_requests_share_one_model(client, registry):
    texts = ["汤姆喜欢猫。", "玛丽喜欢狗。", "我喜欢书。", "汤姆喜欢狗。"] * 2
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda t: client.get("/api/translate", params={"text": t}), texts))
    assert [a.status_code for a in answers] == [200] * 8
    alone = client.get("/api/translate", params={"text": texts[0]}).json()
    assert answers[0].json()["translation"] == alone["translation"]  # no request disturbed another
    assert len(registry._loaded) == 1  # loaded once


def test_the_query_is_strict_utf8_whether_escaped_or_raw():
    assert parse_query("text=汤姆&beam=3".encode()) == {"text": "汤姆", "beam": "3"}
    assert parse_query(b"text=%E6%B1%A4%E5%A7%86") == {"text": "汤姆"}
    for raw in (b"text=%FF", b"text=\xff\xfe", b"beam=%C3"):
        with pytest.raises(BadRequest, match="not valid UTF-8"):
            parse_query(raw)
