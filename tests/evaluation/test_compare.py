"""Every evaluation kept, every comparison honest: results named by what decoded them, outputs
checked against their checksum, and a verdict that claims no more than the test shows."""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import replace

import pytest
import yaml
from random_checkpoint import single_thread, write_random_checkpoint

from nmt.config.loader import save_config
from nmt.config.tuned import tuned_path
from nmt.data.prepare import prepare
from nmt.data.vocab import Vocab
from nmt.decoding.plan import plan_for
from nmt.errors import NMTError
from nmt.evaluation.compare import compare, read_side, verdict
from nmt.evaluation.evaluate import evaluate
from nmt.evaluation.report import collect_runs
from nmt.io import file_sha256

REFERENCES = [f"the cat number {i} sat on the mat today" for i in range(60)]
SYSTEM_A = [f"the cat number {i} sat on the mat" for i in range(60)]
SYSTEM_B = [f"the cat {i} sat" if i % 3 == 0 else f"a cat number {i} sat on a mat today"
            for i in range(60)]


def write_side(folder, lines, search=None):
    folder.mkdir(parents=True)
    hypotheses = folder / "hypotheses.test.en"
    hypotheses.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    results = {"split": "test", "hypotheses": str(hypotheses),
               "hypotheses_sha256": file_sha256(hypotheses), "search": search or {"beam_size": 5}}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return folder


def test_identical_outputs_are_identical_with_no_test(tmp_path):
    a = write_side(tmp_path / "a", SYSTEM_A)
    b = write_side(tmp_path / "b", SYSTEM_A, {"beam_size": 5, "word_reward": 0.3})
    report = "\n".join(compare(read_side(a), read_side(b), REFERENCES))
    assert "identical outputs" in report and "p =" not in report and "significant" not in report
    assert "search.word_reward: None → 0.3" in report  # the settings that differ are named


def test_a_copied_run_folder_compares_its_own_outputs_and_a_changed_file_is_refused(tmp_path):
    original = write_side(tmp_path / "runs" / "a", SYSTEM_A)
    copy = tmp_path / "kept" / "a"
    shutil.copytree(original, copy)
    # the original's outputs are written over by another evaluation
    (original / "hypotheses.test.en").write_text("".join(x + "\n" for x in SYSTEM_B), encoding="utf-8")
    assert read_side(copy).hypotheses == SYSTEM_A  # the copy's own, beside its results
    with pytest.raises(NMTError, match=r"hypotheses.test.en changed after .*results.json scored it"):
        read_side(original)
    report = "\n".join(compare(read_side(copy), read_side(write_side(tmp_path / "b", SYSTEM_B)),
                               REFERENCES))
    assert "B - A" in report and "p = " in report


def test_significant_needs_p_below_005_and_an_interval_that_excludes_zero():
    assert verdict(1.2, (0.4, 2.0), 0.01).startswith("significant at 0.05 (B is better)")
    assert verdict(-1.2, (-2.0, -0.4), 0.01).startswith("significant at 0.05 (A is better)")
    assert verdict(0.0, (0.0, 0.0), 0.001).startswith("not significant")  # a system against itself
    assert verdict(0.8, (-0.1, 1.7), 0.04).startswith("not significant")
    assert verdict(1.5, (0.2, 2.9), 0.06).startswith("not significant")


@pytest.fixture
def run(smoke_config):
    """A trained-looking run: one random model over the prepared vocabularies, config.yaml saved."""
    prepared = prepare(smoke_config)
    zh, en = (Vocab.load(prepared.vocab(lang)).itos[4:] for lang in ("zh", "en"))
    config = replace(smoke_config, training=replace(smoke_config.training, device="cpu"))
    write_random_checkpoint(config.run_dir / "checkpoints" / "best.pt", config, zh, en)
    save_config(config, config.run_dir / "config.yaml")
    return config


def test_evaluations_with_other_settings_keep_their_own_results(run, caplog):
    with single_thread():
        own = evaluate(plan_for(run))
        greedy = evaluate(plan_for(replace(run, search=replace(run.search, beam_size=1)),
                                   ["search.beam_size=1"]))
        tuned_path(run).write_text(yaml.safe_dump({"search": {"word_reward": 0.4}}), encoding="utf-8")
        tuned = evaluate(plan_for(run))
        with caplog.at_level(logging.INFO, logger="nmt.evaluation.evaluate"):
            again = evaluate(plan_for(run))
    assert own["label"] is None and greedy["label"].startswith("settings-")
    assert tuned["label"].startswith("settings-") and tuned["label"] != greedy["label"]
    assert greedy["decoding"] == {"search.beam_size": 1}
    assert tuned["decoding"] == {"search.word_reward": 0.4} and tuned["tuned"].endswith("search.tuned.yaml")
    files = sorted(p.name for p in run.run_dir.glob("results*.json"))
    assert files == sorted(["results.json", f"results.{greedy['label']}.json",
                            f"results.{tuned['label']}.json"])
    assert again["label"] == tuned["label"] and "replaced" in caplog.text
    for results in (own, greedy, tuned):  # each file still holds its own score and outputs
        assert read_side(run.run_dir / (f"results.{results['label']}.json" if results["label"]
                                        else "results.json")).results["bleu"] == results["bleu"]
    assert read_side(run.run_dir).results["label"] == tuned["label"]  # the folder: what make eval wrote
    rows = {row["name"]: row for row in collect_runs(run.runs_dir)}
    assert rows[f"smoke ({greedy['label']})"]["settings"] == "search.beam_size=1"
    assert rows[f"smoke ({tuned['label']})"]["settings"] == "search.word_reward=0.4"
