"""Evaluate and report: results.json holds the BLEU sacrebleu gives for the written files."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import sacrebleu
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO
from nmt.data.prepare import prepare
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.decoding.plan import plan_for
from nmt.evaluation.evaluate import evaluate, format_results
from nmt.evaluation.report import COLUMNS, collect_runs, format_table
from nmt.io import read_lines



@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


@pytest.fixture
def evaluated(smoke_config):
    """The tiny corpus prepared, a random model over its real vocabularies, evaluated."""
    prepared = prepare(smoke_config)
    src = Vocab.load(prepared.vocab("zh")).itos[4:]
    tgt = Vocab.load(prepared.vocab("en")).itos[4:]
    checkpoint = write_random_checkpoint(smoke_config.run_dir / "checkpoints" / "best.pt",
                                         smoke_config, src, tgt, step=40)
    return smoke_config, prepared, checkpoint, evaluate(plan_for(smoke_config))


def test_results_match_sacrebleu_on_the_written_files(evaluated):
    config, prepared, checkpoint, results = evaluated
    saved = json.loads((config.run_dir / "results.json").read_text(encoding="utf-8"))
    assert saved == results
    hypotheses = read_lines(config.run_dir / "hypotheses.test.en")
    references = read_lines(prepared.text("test", "en"))
    assert len(hypotheses) == len(references) == results["sentences"] > 0
    assert any(hypotheses)  # the random model does say something
    assert results["bleu"] == pytest.approx(sacrebleu.corpus_bleu(hypotheses, [references]).score)
    assert results["chrf"] == pytest.approx(sacrebleu.corpus_chrf(hypotheses, [references]).score)
    assert results["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert results["chrf_signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0")
    assert results["beam_size"] == config.search.beam_size == 3
    assert results["checkpoint"] == str(checkpoint) and results["step"] == 40
    assert results["split"] == "test" and results["sentences_per_second"] > 0
    assert results["dtype"] == "float32" and results["threads"] >= 1 and results["cpu"]
    assert "BLEU" in format_results(results)
    events = list((config.run_dir / "tensorboard").glob("events.out.tfevents.*"))
    assert events


def test_other_data_settings_are_refused(evaluated):
    config, _, checkpoint, _ = evaluated
    other = replace(config, data=replace(config.data, split_seed=99))
    with pytest.raises(NMTError, match="split_seed"):
        evaluate(plan_for(other, checkpoints=checkpoint))


def test_report_table(evaluated, tmp_path):
    config, _, _, results = evaluated
    Path(config.runs_dir, "empty").mkdir()  # not a run: left out
    broken = Path(config.runs_dir, "broken")
    (broken / "checkpoints").mkdir(parents=True)
    (broken / "results.json").write_text("{not json", encoding="utf-8")
    rows = collect_runs(config.runs_dir)
    assert [r["name"] for r in rows] == ["broken", "smoke"]
    smoke = rows[1]
    assert smoke["attention"] == "additive" and smoke["step"] == 40
    assert smoke["architecture"] == "rnn"
    assert smoke["dev_bleu"] == 1.5 and smoke["train_seconds"] == 12.5  # from the checkpoint
    assert smoke["test_bleu"] == results["bleu"] and smoke["parameters"] > 1000
    table = format_table(rows)
    assert "smoke" in table and "additive" in table and f"{results['bleu']:.2f}" in table
    assert table.splitlines()[2].split()[1:] == ["-"] * (len(COLUMNS) - 1)  # broken: all missing

    summary = {"name": "smoke", "architecture": "transformer", "attention": "4-head",
               "parameters": 2_500_000, "step": 900, "train_seconds": 3725.0, "best_dev_bleu": 12.345}
    (config.run_dir / "train_summary.json").write_text(json.dumps(summary), encoding="utf-8")
    smoke = collect_runs(config.runs_dir)[1]
    assert (smoke["architecture"], smoke["attention"], smoke["step"], smoke["dev_bleu"]) == (
        "transformer", "4-head", 900, 12.345)
    assert "2.5M" in format_table([smoke]) and "1h02m" in format_table([smoke])


@pytest.mark.e2e
def test_evaluate_script_without_a_checkpoint(smoke_config):
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "evaluate.py"), str(REPO / "configs" / "smoke.yaml"),
         f"runs_dir={smoke_config.runs_dir}"],
        capture_output=True, text=True, check=False, timeout=120, cwd=REPO)
    assert done.returncode == 2
    assert done.stderr.startswith("error: no checkpoint in") and "Traceback" not in done.stderr
