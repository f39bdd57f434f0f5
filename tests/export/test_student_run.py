"""A run with export.engine decodes with its engine through every way in: the plan writes the
export folder once, make eval, scripts/translate.py, the web API and Translator.from_run use it,
the folder alone loads in a fresh process, and a broken folder is an error that says why."""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys

from dataclasses import replace

import pytest
import torch
import yaml
from fastapi.testclient import TestClient
from random_checkpoint import write_random_checkpoint, write_random_members

from helpers import REPO
from nmt.config.loader import load_config
from nmt.data.prepare import prepare
from nmt.config.tuned import tuned_path
from nmt.decoding.plan import plan_for, resolve_plan
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.evaluation.evaluate import evaluate
from nmt.export.folder import MANIFEST, export_dir
from nmt.decoding.translator import EngineTranslator
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry

LINES = ["汤姆喜欢猫。", "", "我们明天去公园吧。"]


def options(tmp_path, tiny_corpus) -> list[str]:
    return [f"data.corpus={tiny_corpus}", f"data.prepared_dir={tmp_path / 'prepared'}",
            f"runs_dir={tmp_path / 'runs'}", "training.device=cpu", "export.engine=ctranslate2"]


@pytest.fixture
def student(tmp_path, tiny_corpus):
    """A smoke Transformer run (random weights) that decodes with CTranslate2 in int8."""
    config = load_config(REPO / "configs" / "smoke_transformer.yaml", options(tmp_path, tiny_corpus))
    prepare(config)
    write_random_members(config)
    return config


def run_script(path: str, arguments: list[str], monkeypatch, capsys) -> list[str]:
    """The script at `path` (from the repository root) with ARGUMENTS, in this process (no
    second torch import): its stdout lines."""
    script = REPO / path
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # the scripts set it; undone after
    monkeypatch.setattr(sys, "argv", [str(script), *arguments])
    capsys.readouterr()
    runpy.run_path(str(script), run_name="__main__")
    return capsys.readouterr().out.splitlines()


def test_the_plan_exports_once_and_every_way_in_decodes_with_the_engine(student):
    assert resolve_plan(student).pending and not list(student.run_dir.glob("export.*"))
    with pytest.raises(NMTError, match="still to be written .* `make eval"):
        Translator.from_config(student)  # a constructor only reads
    plan = plan_for(student)
    assert plan.engine == export_dir(student, plan.checkpoint_sha256[0])
    assert plan.label == "ctranslate2-int8" and not plan.pending
    written = (plan.engine / MANIFEST).stat().st_mtime_ns
    assert plan_for(student).engine == plan.engine
    assert (plan.engine / MANIFEST).stat().st_mtime_ns == written, "written once"

    from_config = Translator.from_config(student).translate(LINES)
    from_run = Translator.from_run(student.run_dir).translate(LINES)
    from_folder = Translator.from_run(plan.engine).translate(LINES)
    assert isinstance(Translator.from_run(plan.engine), EngineTranslator)
    assert [t.text for t in from_config] == [t.text for t in from_run] == [t.text for t in from_folder]
    assert from_config[1].text == "" and from_config[0].attention is not None

    results = evaluate(plan)
    assert results["model"].startswith("ctranslate2") and results["dtype"] == "int8"
    assert (student.run_dir / "results.ctranslate2-int8.json").is_file()


def test_the_folder_alone_translates_in_a_fresh_process(student, tmp_path):
    folder = plan_for(student).engine
    copy = shutil.copytree(folder, tmp_path / "elsewhere" / "student")
    expected = [t.text for t in Translator.from_run(copy).translate(LINES)]
    shutil.rmtree(student.run_dir)  # no checkpoint, no run, no prepared data left
    shutil.rmtree(student.data.prepared_dir)
    code = ("import json, sys; from nmt import Translator; "
            "print(json.dumps([t.text for t in Translator.from_run(sys.argv[1]).translate("
            f"{LINES!r})]))")
    found = subprocess.run([sys.executable, "-c", code, str(copy)], capture_output=True, text=True,
                           cwd=tmp_path, check=True)
    assert json.loads(found.stdout.strip().splitlines()[-1]) == expected


def test_a_broken_or_foreign_folder_says_what_is_wrong(student):
    folder = plan_for(student).engine
    manifest = json.loads((folder / MANIFEST).read_text())
    (folder / MANIFEST).write_text(json.dumps({**manifest, "format": 99}))
    with pytest.raises(NMTError, match="export format 99"):
        Translator.from_run(folder)
    (folder / MANIFEST).write_text(json.dumps(manifest))
    (folder / "engine" / "model.bin").unlink()
    with pytest.raises(NMTError, match="model.bin is missing"):
        Translator.from_run(folder)
    (folder / MANIFEST).write_text("{not json")
    with pytest.raises(NMTError, match="export.json is damaged"):
        Translator.from_run(folder)


def test_the_web_api_says_the_engine_answered_and_alignment_says_why_not(student):
    registry = RunRegistry(student.runs_dir, student.name, device="cpu",
                           default_plan=plan_for(student))
    registry.get()  # loaded here, so the app's start does not load it in the background
    with TestClient(create_app(registry)) as client:
        body = client.get("/api/translate", params={"text": LINES[0], "attention": "true"}).json()
    assert body["model"].startswith("ctranslate2") and "int8" in body["model"]
    assert body["attention"] and len(body["attention"]) == len(body["target_tokens"])
    translator = Translator.from_config(student)
    from nmt.align.translated import align_lines
    with pytest.raises(NMTError, match="word alignment .* PyTorch model"):
        align_lines(translator, ["汤姆喜欢猫。"], ["Tom likes cats ."])


def test_the_scripts_translate_with_the_engine_and_align_with_its_checkpoint(
        student, tmp_path, tiny_corpus, monkeypatch, capsys):
    source = tmp_path / "input.zh"
    source.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    config = str(REPO / "configs" / "smoke_transformer.yaml")
    found = run_script("scripts/translate.py", [config, *options(tmp_path, tiny_corpus), "--input",
                                        str(source)], monkeypatch, capsys)
    assert found == [t.text for t in Translator.from_config(student).translate(LINES)]
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("汤姆喜欢猫。\tTom likes cats .\n", encoding="utf-8")
    # make align reads the checkpoint the export was made from: the student's own attention
    links = run_script("scripts/align.py", [config, *options(tmp_path, tiny_corpus), "--input", str(pairs)],
                       monkeypatch, capsys)
    assert len(links) == 1 and all("-" in link for link in links[0].split())


def test_a_recurrent_run_cannot_name_the_engine(tiny_corpus):
    with pytest.raises(NMTError, match="export.engine = ctranslate2 runs Transformers"):
        load_config(REPO / "configs" / "smoke.yaml", [
            f"data.corpus={tiny_corpus}", "export.engine=ctranslate2"])


def test_one_export_folder_per_checkpoint_carrying_the_tuned_search(student, tmp_path):
    """Another checkpoint exports beside, never over, the run's; a run reached by another
    spelling of its path reuses its export; the folder carries the tuned search it was made
    with, so decoded alone it searches as make eval does."""
    own = plan_for(student).engine
    other = write_random_checkpoint(tmp_path / "other.pt", replace(student, seed=9))
    elsewhere = plan_for(student, checkpoints=other)
    assert elsewhere.engine != own and own.is_dir() and elsewhere.engine.is_dir()
    assert elsewhere.label.startswith("other-")  # its own results file too
    spelled = replace(student, runs_dir=os.path.relpath(student.runs_dir))
    written = (own / MANIFEST).stat().st_mtime_ns
    assert plan_for(spelled).engine.resolve() == own.resolve()
    assert (own / MANIFEST).stat().st_mtime_ns == written
    tuned_path(student).write_text(yaml.safe_dump({
        "search": {"length_penalty": 1.7},
        "tuned_on": list(plan_for(student).checkpoint_sha256)}), encoding="utf-8")
    assert resolve_plan(student).pending == [own]  # the export is of another search now
    retuned = plan_for(student)
    assert retuned.engine == own and (own / "search.tuned.yaml").is_file()
    alone = Translator.from_run(own)
    assert alone.search.length_penalty == 1.7 == retuned.search.length_penalty


def test_the_engine_bench_measures_each_export_folder(student, tmp_path, tiny_corpus,
                                                      monkeypatch, capsys):
    int8 = plan_for(student).engine.name  # export.int8.<sha8>/
    float32 = plan_for(load_config(REPO / "configs" / "smoke_transformer.yaml",
                                   [*options(tmp_path, tiny_corpus), "export.quantization=float32"])
                       ).engine.name
    lines = run_script("bench/bench_engine.py", [
        str(REPO / "configs" / "smoke_transformer.yaml"), *options(tmp_path, tiny_corpus),
        "--beams", "1", "2"], monkeypatch, capsys)
    measured = [line.split()[:7] for line in lines if "sentences/s" in line]
    workers = sorted({"1", str(torch.get_num_threads())})
    assert measured == [[folder, "workers", n, "beam", beam, scores, "scores:"]
                        for folder in (float32, int8) for n in workers
                        for beam in ("1", "2") for scores in ("exact", "engine's")]
