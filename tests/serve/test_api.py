"""The JSON API: a good request's shape (GET and POST), the OpenAPI description of both, and
every bad request a 4xx JSON error, never a dead server. tests/serve/test_fuzz.py lets a fuzzer
loose on the same app."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from starlette.datastructures import QueryParams

from random_checkpoint import single_thread
from nmt.serve.app import create_app
from nmt.serve.errors import RequestGuard, is_utf8_query
from nmt.config.serve_schema import ServeConfig

LIMITS = ServeConfig(max_chars=50, max_lines=8)


@pytest.fixture
def client(registry):
    with single_thread():
        yield TestClient(create_app(registry, LIMITS), raise_server_exceptions=False)


def test_a_translation_with_its_attention_and_links(client):
    answer = client.get("/api/translate", params={"text": "汤姆喜欢猫。", "beam": 3, "nbest": 2,
                                                  "attention": "true", "links": "true"})
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


def test_several_lines_and_a_transformer_with_every_layer_and_head(client, registry):
    body = client.get("/api/translate", params={"text": "汤姆喜欢猫。\n\n玛丽喜欢狗。",
                                                "run": "transformer", "beam": 2,
                                                "attention": "true"}).json()
    assert body["architecture"] == "transformer" and len(body["lines"]) == 2
    layers = body["lines"][1]["layers"]  # (layers, heads, T, S)
    assert (len(layers), len(layers[0])) == registry.get("transformer").translator.model.attention_grid
    assert len(layers[0][0]) == len(body["lines"][1]["target_tokens"])


def test_runs_health_page_and_font(client):
    assert client.get("/api/runs").json() == {"runs": ["rnn", "transformer"], "default": "rnn"}
    transformer = client.get("/api/runs/transformer").json()
    assert (transformer["run"], transformer["architecture"]) == ("transformer", "transformer")
    assert client.get("/api/runs/nosuchrun").status_code == 404
    assert client.get("/api/health").json()["ok"] is True
    page = client.get("/")
    assert page.status_code == 200 and "/static/app.js" in page.text and "http" not in page.text.split("<body>")[0].replace("http-equiv", "")
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/font").status_code == 200  # the font the plots use, served locally


@pytest.mark.parametrize("query, status, says", [
    ("", 400, "text is missing"),
    ("text=", 400, "empty"),
    ("text=%20%20%0A", 400, "empty"),
    ("text=" + "猫" * 51, 400, "text (51 characters): string should have at most 50 characters"),
    ("text=猫&beam=0", 400, "beam = 0: input should be greater than or equal to 1"),
    ("text=猫&beam=1000", 400, "beam = 1000: input should be less than or equal to 50"),
    ("text=猫&beam=many", 400, "beam = many: input should be a valid integer"),
    ("text=猫&nbest=0&beam=0", 400, "nbest = 0"),  # every wrong parameter is named
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


@pytest.mark.parametrize("body, status, says", [
    ({"lines": []}, 400, "lines = []: list should have at least 1 item"),
    ({"lines": ["猫"] * 9}, 400, "list should have at most 8 items"),
    ({"lines": ["猫" * 30, "狗" * 51]}, 400, "lines[1] (51 characters): string should have at most 50"),
    ({"lines": ["猫", 3]}, 400, "lines[1] = 3: input should be a valid string"),
    ({"lines": ["猫"], "beam": 0}, 400, "beam = 0"),
    ({"lines": ["猫"], "beam_size": 3}, 400, "beam_size = 3: extra inputs are not permitted"),
    ({"text": "猫"}, 400, "lines is missing"),
    (["猫"], 400, "the body: input should be a valid dictionary"),
    ({"lines": ["猫"], "run": "nosuchrun"}, 404, "no trained run"),
])
def test_bad_batches_get_a_json_error(client, body, status, says):
    answer = client.post("/api/translate", json=body)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]


@pytest.mark.parametrize("send, status, says", [
    (dict(content='{"lines": ["猫"]'.encode()), 400, "the body is not JSON"),
    (dict(content=b""), 400, "the body is missing"),
    (dict(content=b" " * 500_000), 413, "over the limit"),  # refused unread
], ids=["not JSON", "no body", "too long"])
def test_a_body_that_is_no_batch_gets_a_json_error(client, send, status, says):
    answer = client.post("/api/translate", headers={"Content-Type": "application/json"}, **send)
    assert answer.status_code == status, answer.text
    assert says in answer.json()["error"]


def test_unknown_paths_and_methods_get_a_json_error(client):
    assert client.get("/api/nothing").json() == {"error": "GET /api/nothing: Not Found"}
    for method in ("DELETE", "OPTIONS", "PUT"):
        answer = client.request(method, "/api/translate")
        assert answer.status_code == 405 and "Method Not Allowed" in answer.json()["error"]
        assert answer.headers["allow"] == "GET, POST"  # every method the path serves
    assert client.request("OPTIONS", "/api/runs").headers["allow"] == "GET"


@pytest.mark.parametrize("send", [
    lambda client: client.get("/api/translate", params={"text": "猫", "beam": 2, "nbest": 3}),
    lambda client: client.post("/api/translate", json={"lines": ["猫"], "beam": 2, "nbest": 3})])
def test_an_nbest_over_the_beam_gets_the_beams_with_a_warning(client, send):
    answer = send(client)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["warnings"] == ["nbest = 3 is more than the beam (2): 2 returned"]
    assert len(body["lines"][0]["nbest"]) == 2


def test_a_beam_wider_than_the_vocabulary_allows_is_narrowed_with_a_warning(client):
    """The smoke model writes 11 target tokens: a beam keeps 2 × beam candidates, so at most 5."""
    body = client.get("/api/translate", params={"text": "猫", "beam": 30, "nbest": 8}).json()
    assert body["warnings"] == ["beam = 30 is more than this model's vocabulary allows: 5 used",
                                "nbest = 8 is more than the beam (5): 5 returned"]
    assert len(body["lines"][0]["nbest"]) == 5


def test_a_batch_answers_each_line_in_order(client):
    lines = ["玛丽喜欢狗。", "", "汤姆喜欢猫。", "汤姆喜欢猫。"]
    asked = {"attention": True, "links": True}
    answer = client.post("/api/translate", json={"lines": lines, "beam": 3, "nbest": 2,
                                                 "run": "transformer", **asked})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["run"] == "transformer" and body["architecture"] == "transformer"
    assert [line["source_tokens"] for line in body["lines"]] == [
        ["玛丽", "喜欢", "狗", "。"], [], ["汤姆", "喜欢", "猫", "。"], ["汤姆", "喜欢", "猫", "。"]]
    blank = body["lines"][1]  # a blank line keeps its place, with nothing translated
    assert blank["translation"] == "" and blank["attention"] is None and blank["links"] == []
    assert body["lines"][2] == body["lines"][3] and body["lines"][0]["layers"]
    alone = client.get("/api/translate", params={"text": lines[0], "beam": 3, "nbest": 2,
                                                 "run": "transformer", **asked}).json()
    assert body["lines"][0] == alone["lines"][0]  # the same per-line answer as GET


def test_openapi_lists_the_parameters_their_limits_and_the_answers(client):
    api = client.get("/openapi.json").json()
    get, post = api["paths"]["/api/translate"]["get"], api["paths"]["/api/translate"]["post"]
    parameters = {p["name"]: p for p in get["parameters"]}
    assert set(parameters) == {"text", "beam", "nbest", "run", "attention", "links"}
    assert parameters["text"]["required"] and parameters["text"]["schema"]["maxLength"] == 50
    beam = next(s for s in parameters["beam"]["schema"]["anyOf"] if s["type"] == "integer")
    assert (beam["minimum"], beam["maximum"]) == (1, 50)
    assert "default: the run's beam" in parameters["beam"]["description"]
    assert not any(parameters[name]["required"] for name in ("beam", "nbest", "run", "attention", "links"))
    assert parameters["attention"]["schema"]["default"] is False
    batch = api["components"]["schemas"]["TranslateBatch"]
    lines = batch["properties"]["lines"]
    assert batch["required"] == ["lines"] and lines["maxItems"] == 8 and lines["items"]["maxLength"] == 50
    for operation in (get, post):  # a busy server's answer is declared, with its Retry-After
        busy = operation["responses"]["503"]
        assert busy["content"]["application/json"]["schema"]["$ref"].endswith("/Error")
        assert "Retry-After" in busy["headers"]
    assert post["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/TranslateBatch")
    for operation, answer in ((get, "TextResult"), (post, "BatchResult")):
        assert operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(answer)
        errors = operation["responses"]["4XX"]["content"]["application/json"]["schema"]
        assert errors["$ref"].endswith("/Error") and "422" not in operation["responses"]


def test_the_docs_page_is_served(client):
    docs = client.get("/docs")
    assert docs.status_code == 200 and "swagger-ui" in docs.text and "/openapi.json" in docs.text


def test_the_query_is_strict_utf8_whether_escaped_or_raw():
    assert is_utf8_query("text=汤姆&beam=3".encode()) and is_utf8_query(b"text=%E6%B1%A4%E5%A7%86")
    for raw in (b"text=%FF", b"text=\xff\xfe", b"beam=%C3"):
        assert not is_utf8_query(raw)


def test_raw_utf8_in_the_query_reads_as_sent():
    """httptools passes raw bytes that Starlette would read as Latin-1: the guard escapes them."""
    seen = {}

    async def app(scope, receive, send):
        seen["query"] = QueryParams(scope["query_string"].decode("latin-1"))

    scope = {"type": "http", "method": "GET", "headers": [],
             "query_string": "text=汤姆 喜欢&beam=3&x=%E7%8C%AB".encode()}
    asyncio.run(RequestGuard(app, max_body_bytes=100)(scope, None, None))
    assert dict(seen["query"]) == {"text": "汤姆 喜欢", "beam": "3", "x": "猫"}
