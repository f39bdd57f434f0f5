"""All model work in the decoding thread, and only when asked: a plain API call is searched
without attention and gets nulls; attention, a Transformer's layers and the word links (both
directions' where the run has a channel model) are made in the thread that searches."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

import nmt.serve.answers
from random_checkpoint import SRC_WORDS, TGT_WORDS, single_thread, write_random_checkpoint
from nmt.config.loader import save_config
from nmt.config.serve_schema import ServeConfig
from nmt.decoding.translator import Translator
from nmt.serve.app import create_app

LINES = ["汤姆喜欢猫。", "玛丽喜欢狗。"]


@pytest.fixture
def seen(monkeypatch):
    """What ran where: each search's thread and whether it kept attention, and the threads of
    every teacher-forced pass (every head of a Transformer, the links of both directions)."""
    seen: dict[str, list] = {"search": [], "layers": [], "align": []}
    search, layers, align = Translator.translate, Translator.cross_attention, nmt.serve.answers.align_lines

    def searching(self, lines, *args, **kwargs):
        seen["search"].append((threading.current_thread().name, self.keep_attention))
        return search(self, lines, *args, **kwargs)

    def every_head(self, translation):
        seen["layers"].append(threading.current_thread().name)
        return layers(self, translation)

    def aligning(*args, **kwargs):
        seen["align"].append(threading.current_thread().name)
        return align(*args, **kwargs)

    monkeypatch.setattr(Translator, "translate", searching)
    monkeypatch.setattr(Translator, "cross_attention", every_head)
    monkeypatch.setattr(nmt.serve.answers, "align_lines", aligning)
    return seen


@pytest.fixture
def client(registry, smoke, tmp_path):
    """The registry's runs and "both": a recurrent run that reranks with a channel (reverse)
    model, whose links come from both directions."""
    reverse = write_random_checkpoint(
        tmp_path / "reverse.pt", replace(smoke, model=replace(smoke.model, direction="reverse")),
        TGT_WORDS, SRC_WORDS)
    config = replace(smoke, name="both", runs_dir=str(registry.runs_dir),
                     training=replace(smoke.training, device="cpu"),
                     eval=replace(smoke.eval, rerank=[str(reverse)], rerank_weights=[0.0]))
    (registry.runs_dir / "both" / "checkpoints").mkdir(parents=True)
    save_config(config, registry.runs_dir / "both" / "config.yaml")
    write_random_checkpoint(registry.runs_dir / "both" / "checkpoints" / "best.pt", config)
    with single_thread():
        yield TestClient(create_app(registry, ServeConfig(max_chars=50)), raise_server_exceptions=False)


@pytest.mark.parametrize("run", ["rnn", "transformer", "both"])
def test_a_plain_call_costs_its_translation_alone(client, seen, run):
    answer = client.post("/api/translate", json={"lines": LINES, "run": run})
    assert answer.status_code == 200, answer.text
    for line in answer.json()["lines"]:
        assert line["translation"] and line["target_tokens"]  # the translation is all there
        assert (line["attention"], line["links"], line["layers"]) == (None, None, None)
    assert seen == {"search": [("decode", False)], "layers": [], "align": []}


def test_attention_and_layers_are_made_in_the_decoding_thread_when_asked(client, seen):
    body = client.post("/api/translate", json={"lines": LINES, "run": "transformer",
                                               "attention": True}).json()
    assert seen == {"search": [("decode", True)], "layers": ["decode", "decode"], "align": []}
    for line in body["lines"]:
        assert len(line["attention"]) == len(line["target_tokens"]) and line["layers"]
        assert line["links"] is None  # not asked for


@pytest.mark.parametrize("run, aligned", [("rnn", []), ("both", ["decode"])])
def test_links_are_made_in_the_decoding_thread_when_asked(client, seen, run, aligned):
    """A run with a channel model teacher-forces the translations through both directions, in
    the decoding thread (one pass for the batch); another reads its search's attention."""
    body = client.get("/api/translate", params={"text": "\n".join(LINES), "run": run,
                                                "links": "true"}).json()
    assert seen["search"] == [("decode", not aligned)] and seen["align"] == aligned
    assert seen["layers"] == []
    for line in body["lines"]:
        assert line["attention"] is None and line["links"]
        assert all(0 <= s < len(line["source_tokens"]) and 0 <= t < len(line["target_tokens"])
                   for s, t in line["links"])


def test_what_is_asked_does_not_change_the_translation(client, seen):
    plain = client.post("/api/translate", json={"lines": LINES, "run": "both", "nbest": 2}).json()
    asked = client.post("/api/translate", json={"lines": LINES, "run": "both", "nbest": 2,
                                                "attention": True, "links": True}).json()
    assert [(l["translation"], l["nbest"]) for l in plain["lines"]] == \
        [(l["translation"], l["nbest"]) for l in asked["lines"]]
    assert {thread for thread, _ in seen["search"]} | set(seen["align"]) == {"decode"}
