"""One decoding plan per run (nmt/decoding/plan.py): every way into decoding gives make eval's
hypotheses, byte for byte, with a tuned search file and without one."""

from __future__ import annotations

import runpy
import sys
from dataclasses import replace

import pytest
import yaml
from fastapi.testclient import TestClient
from random_checkpoint import single_thread, write_random_members

from helpers import REPO
from nmt.config.loader import load_config
from nmt.config.serve_schema import ServeConfig
from nmt.config.tuned import tuned_path
from nmt.data.prepare import prepare
from nmt.decoding.plan import plan_for
from nmt.decoding.translator import Translator
from nmt.evaluation.evaluate import evaluate, read_split
from nmt.evaluation.tune import tune
from nmt.io import read_lines
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry


@pytest.fixture
def run(tmp_path, tiny_corpus):
    """A run as `make train` leaves the default's shape: two translating members and a channel
    member, random weights over the prepared vocabularies, config.yaml beside them; its config
    file is tmp_path/run.yaml."""
    (tmp_path / "run.yaml").write_text(
        f"extends: {REPO / 'configs' / 'smoke.yaml'}\n"
        "training: {members: 2, channel_members: 1, device: cpu}\neval: {channel_weight: 0.5}\n",
        encoding="utf-8")
    config = load_config(tmp_path / "run.yaml", overrides(tmp_path, tiny_corpus))
    prepare(config)
    write_random_members(config)
    return config


def overrides(tmp_path, corpus) -> list[str]:
    return [f"data.corpus={corpus}", f"data.prepared_dir={tmp_path / 'prepared'}",
            f"runs_dir={tmp_path / 'runs'}"]


def script_output(monkeypatch, capsys, tmp_path, corpus, source) -> list[str]:
    """scripts/translate.py CONFIG --input FILE, in this process (no second torch import)."""
    script = REPO / "scripts" / "translate.py"
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the script sets it; undone after
    monkeypatch.setattr(sys, "argv", [str(script), str(tmp_path / "run.yaml"),
                                      *overrides(tmp_path, corpus), "--input", str(source)])
    capsys.readouterr()
    runpy.run_path(str(script), run_name="__main__")
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("tuned", [False, True])
def test_every_way_in_decodes_as_make_eval(run, tuned, monkeypatch, capsys, tmp_path, tiny_corpus):
    config = run
    if tuned:  # what make tune leaves: other search settings and another channel weight
        tuned_path(config).write_text(yaml.safe_dump({
            "search": {"stop": "beam_full", "length_penalty": 1.4, "coverage_penalty": 0.2,
                       "word_reward": 0.3}, "eval": {"rerank_weights": [], "channel_weight": 2.0}}),
            encoding="utf-8")
    plan = plan_for(config)
    assert [m.channel for m in plan.rescoring] == [True] and len(plan.checkpoints) == 2
    assert (plan.search.word_reward, plan.rescoring[0].weight) == ((0.3, 2.0) if tuned else (0.0, 0.5))
    with single_thread():
        results = evaluate(plan)
        expected = read_lines(results["hypotheses"])
        sources, _ = read_split(prepare(config), "test")

        def texts(translator: Translator) -> list[str]:
            return [t.text for t in translator.translate(sources)]

        assert texts(Translator.from_config(config)) == expected
        assert texts(Translator.from_run(config.run_dir, device="cpu")) == expected
        assert texts(Translator.from_plan(plan)) == expected
        source = tmp_path / "test.zh"
        source.write_text("".join(line + "\n" for line in sources), encoding="utf-8")
        assert script_output(monkeypatch, capsys, tmp_path, tiny_corpus, source) == expected
        registry = RunRegistry(config.runs_dir, config.name, device="cpu")
        client = TestClient(create_app(registry, ServeConfig(max_lines=100)))
        answer = client.post("/api/translate", json={"lines": sources,
                                                     "beam": plan.search.beam_size}).json()
        assert [line["translation"] for line in answer["lines"]] == expected


def test_tune_decodes_through_the_translators_path(run):
    """make tune's first trial of the rescoring weights is make eval's decoding of dev."""
    config = replace(run, eval=replace(run.eval, split="dev"))
    with single_thread():
        dev = evaluate(plan_for(config))
        seen = []
        tune(config, seen.append, grid={}, rerank_weights=[0.5])
    assert seen[1].setting.endswith("eval.channel_weight=0.5")
    assert seen[1].bleu == pytest.approx(dev["bleu"], abs=1e-9)
