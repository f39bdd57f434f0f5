"""make tune: settings tried on dev, the best written to the run folder, and used after."""

from __future__ import annotations

import json
import runpy
import sys
from dataclasses import replace

import pytest
import yaml
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO
from nmt.config.loader import save_config
from nmt.config.tuned import tuned_path, with_tuned_search
from nmt.data.prepare import prepare
from nmt.data.vocab import Vocab
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.evaluation.tune import tune


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


@pytest.fixture
def trained(smoke_config, tmp_path):
    """A random forward model over the tiny corpus's vocabularies, and a reverse one."""
    prepared = prepare(smoke_config)
    zh = Vocab.load(prepared.vocab("zh")).itos[4:]
    en = Vocab.load(prepared.vocab("en")).itos[4:]
    write_random_checkpoint(smoke_config.run_dir / "checkpoints" / "best.pt", smoke_config, zh, en)
    reverse = replace(smoke_config, model=replace(smoke_config.model, direction="reverse"))
    return smoke_config, write_random_checkpoint(tmp_path / "reverse.pt", reverse, en, zh)


def test_tune_tries_each_setting_on_dev_and_writes_the_best(trained):
    config, reverse = trained
    config = replace(config, eval=replace(config.eval, rerank=[str(reverse)], rerank_weights=[0.0]))
    seen = []
    tuned = tune(config, seen.append, grid={"stop": ["beam_full"], "word_reward": [0.0, 0.5]},
                 rerank_weights=[0.0, 0.5])
    # the start, stop=beam_full, word_reward=0.5 (0.0 is the start's), the n-best, weight 0.5
    assert len(seen) == 5 and "search.word_reward=0.5" in seen[2].setting
    assert "eval.rerank_weights=[0.5]" in seen[4].setting
    assert tuned["dev_bleu"] == round(max(trial.bleu for trial in seen), 2)
    saved = yaml.safe_load(tuned_path(config).read_text(encoding="utf-8"))
    assert saved["search"] == tuned["search"] and len(saved["trials"]) == 5
    assert set(saved["search"]) == {"stop", "length_penalty", "coverage_penalty", "word_reward"}
    assert len(saved["eval"]["rerank_weights"]) == 1


def write_tuned(config) -> None:
    tuned_path(config).parent.mkdir(parents=True, exist_ok=True)
    tuned_path(config).write_text(yaml.safe_dump({
        "search": {"stop": "beam_full", "length_penalty": 1.4, "coverage_penalty": 0.2,
                   "word_reward": 0.3}}), encoding="utf-8")


def test_eval_translate_serve_and_the_api_use_the_tuned_search(trained, monkeypatch):
    config, _ = trained
    write_tuned(config)
    search = with_tuned_search(config).search
    assert (search.stop, search.length_penalty, search.coverage_penalty, search.word_reward) == (
        "beam_full", 1.4, 0.2, 0.3)
    # an override on the command line wins over the tuned value
    assert with_tuned_search(config, ["search.word_reward=0"]).search.word_reward == config.search.word_reward
    save_config(config, config.run_dir / "config.yaml")  # what training leaves in the run
    assert Translator.from_run(config.run_dir, device="cpu").search.word_reward == 0.3  # API, serve
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    script = REPO / "scripts" / "evaluate.py"
    monkeypatch.setattr(sys, "argv", [
        str(script), str(REPO / "configs" / "smoke.yaml"), f"data.corpus={config.data.corpus}",
        f"data.prepared_dir={config.data.prepared_dir}", f"runs_dir={config.runs_dir}"])
    runpy.run_path(str(script), run_name="__main__")
    # the tuned decoding's results are its own: results.json stays the untuned run's
    [path] = config.run_dir.glob("results.settings-*.json")
    results = json.loads(path.read_text(encoding="utf-8"))
    assert results["search"]["word_reward"] == 0.3 and results["search"]["stop"] == "beam_full"
    assert results["decoding"]["search.word_reward"] == 0.3 and not (config.run_dir / "results.json").exists()


def test_a_damaged_tuned_file_is_named(trained):
    config, _ = trained
    tuned_path(config).write_text("search: [", encoding="utf-8")
    with pytest.raises(NMTError, match="search.tuned.yaml"):
        with_tuned_search(config)
