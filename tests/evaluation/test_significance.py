"""The paired bootstrap and BLEU's interval: sacrebleu's own figures, on fixture outputs."""

import json
import subprocess
import sys

import pytest
import sacrebleu
from sacrebleu.significance import PairedTest

from helpers import REPO
from nmt.evaluation.significance import bleu_interval, paired_bootstrap

REFERENCES = [f"the cat number {i} sat on the mat today" for i in range(60)]
# A says most of it, B drops words on a third of the sentences.
SYSTEM_A = [f"the cat number {i} sat on the mat" for i in range(60)]
SYSTEM_B = [f"the cat {i} sat" if i % 3 == 0 else f"a cat number {i} sat on a mat today"
            for i in range(60)]


def test_paired_bootstrap_equals_sacrebleus_own():
    ours = paired_bootstrap(REFERENCES, SYSTEM_A, SYSTEM_B)
    metric = sacrebleu.BLEU()
    _, scores = PairedTest([("a", SYSTEM_A), ("b", SYSTEM_B)], {"BLEU": metric},
                           references=[REFERENCES], test_type="bs", n_samples=1000)()
    base, system = scores["BLEU"]
    assert ours["baseline_bleu"] == pytest.approx(base.score)
    assert ours["system_bleu"] == pytest.approx(system.score)
    assert ours["p_value"] == pytest.approx(system.p_value)
    assert ours["difference"] == pytest.approx(system.score - base.score)
    low, high = ours["interval"]
    assert low <= ours["difference_mean"] <= high


def test_a_system_against_itself_differs_by_nothing():
    result = paired_bootstrap(REFERENCES, SYSTEM_A, SYSTEM_A)
    assert result["difference"] == 0 and result["interval"] == [0.0, 0.0]


def test_bleu_interval_is_sacrebleus_bootstrap():
    expected = sacrebleu.BLEU().corpus_score(SYSTEM_B, [REFERENCES], n_bootstrap=1000)._ci
    assert bleu_interval(SYSTEM_B, REFERENCES) == pytest.approx(expected) and expected > 0


def test_outputs_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="same split"):
        paired_bootstrap(REFERENCES, SYSTEM_A, SYSTEM_B[:-1])


def test_compare_script_prints_the_difference(tmp_path):
    (tmp_path / "refs.en").write_text("\n".join(REFERENCES) + "\n", encoding="utf-8")
    for name, lines in (("a", SYSTEM_A), ("b", SYSTEM_B)):
        run = tmp_path / name
        run.mkdir()
        (run / "hyp.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (run / "results.json").write_text(json.dumps(
            {"split": "test", "hypotheses": str(run / "hyp.en")}), encoding="utf-8")
    done = subprocess.run([sys.executable, "scripts/compare.py", str(tmp_path / "a"),
                           str(tmp_path / "b"), "--references", str(tmp_path / "refs.en")],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "B - A" in done.stdout and "95% interval" in done.stdout and "p = " in done.stdout

    # A run folder copied elsewhere: its outputs are found beside its results, or named as gone.
    (tmp_path / "b").rename(tmp_path / "b_copy")
    done = subprocess.run([sys.executable, "scripts/compare.py", str(tmp_path / "a"),
                           str(tmp_path / "b_copy"), "--references", str(tmp_path / "refs.en")],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (tmp_path / "b_copy" / "hyp.en").unlink()
    done = subprocess.run([sys.executable, "scripts/compare.py", str(tmp_path / "a"),
                           str(tmp_path / "b_copy"), "--references", str(tmp_path / "refs.en")],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "hyp.en are gone" in done.stderr and "Traceback" not in done.stderr
    (tmp_path / "b_copy").rename(tmp_path / "b")
    (tmp_path / "b" / "hyp.en").write_text("\n".join(SYSTEM_B) + "\n", encoding="utf-8")
    (tmp_path / "b" / "results.json").write_text(json.dumps(
        {"split": "dev", "hypotheses": str(tmp_path / "b" / "hyp.en")}), encoding="utf-8")
    done = subprocess.run([sys.executable, "scripts/compare.py", str(tmp_path / "a"),
                           str(tmp_path / "b"), "--references", str(tmp_path / "refs.en")],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "same split" in done.stderr


def test_compare_reads_the_references_of_a_run_folder(smoke_config):
    """Without --references: the split of the run's saved config (any version's shape)."""
    from nmt.config.loader import save_config
    from nmt.data.prepare import prepare
    from nmt.io import read_lines

    references = read_lines(prepare(smoke_config).text("test", "en"))
    runs = []
    for name, lines in (("a", references), ("b", [" ".join(r.split()[:-1]) for r in references])):
        run = smoke_config.run_dir.parent / name
        run.mkdir(parents=True)
        save_config(smoke_config, run / "config.yaml")
        (run / "hyp.en").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (run / "results.json").write_text(json.dumps(
            {"split": "test", "hypotheses": str(run / "hyp.en")}), encoding="utf-8")
        runs.append(str(run))
    done = subprocess.run([sys.executable, "scripts/compare.py", *runs], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "BLEU 100.00" in done.stdout and "B - A  -" in done.stdout
