"""The whole pipeline as a user runs it: prepare → train → evaluate → translate, on the smoke config."""

from __future__ import annotations

import pytest
import json
import subprocess
import sys

import sacrebleu

from helpers import REPO

pytestmark = pytest.mark.e2e  # every test here runs the real stages


def run(script: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(REPO / "scripts" / script), *args], cwd=REPO,
                            input=stdin, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{script} failed:\n{result.stderr}"
    return result


def test_prepare_train_evaluate_translate(tmp_path, tiny_corpus):
    config = [str(REPO / "configs" / "smoke.yaml"), f"data.corpus={tiny_corpus}",
              f"data.prepared_dir={tmp_path / 'prepared'}", f"runs_dir={tmp_path / 'runs'}"]
    run("prepare.py", *config)
    run("train.py", *config)
    run_dir = tmp_path / "runs" / "smoke"
    assert (run_dir / "checkpoints" / "best.pt").is_file()

    run("evaluate.py", *config)
    results = json.loads((run_dir / "results.json").read_text())
    hypotheses = (run_dir / "hypotheses.test.en").read_text(encoding="utf-8").splitlines()
    prepared = next((tmp_path / "prepared").iterdir())
    references = (prepared / "test.en").read_text(encoding="utf-8").splitlines()
    assert len(hypotheses) == len(references) == results["sentences"]
    assert results["bleu"] == sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert results["bleu"] > 0, "the smoke model learned something"

    translated = run("translate.py", *config, stdin="汤姆喜欢猫。\n\n我们想要茶。\n").stdout
    lines = translated.split("\n")[:-1]
    assert len(lines) == 3 and lines[0] and lines[1] == "" and lines[2]
