"""Resolving a decoding plan only reads; the materializing step writes, once, whatever the
spelling of the run's path (nmt/decoding/plan.py, nmt/decoding/resolve.py)."""

from __future__ import annotations

import logging
import os
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from random_checkpoint import SRC_WORDS, TGT_WORDS, single_thread, write_random_checkpoint

from helpers import REPO
from nmt.checkpoints.manifest import write_manifest
from nmt.config.loader import load_config, save_config
from nmt.config.tuned import tuned_path
from nmt.decoding.plan import materialize_run, plan_for, resolve_plan, run_plan
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry
from nmt.training.members import member_configs


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


@pytest.fixture
def run(tmp_path):
    """A run of the default's shape that averages (eval.average=last:2): two translating
    members and a channel one, two step checkpoints each, as training leaves them."""
    config = load_config(REPO / "configs" / "smoke.yaml", [
        f"runs_dir={tmp_path / 'runs'}", "training.members=2", "training.channel_members=1",
        "eval.channel_weight=0.5", "eval.average=last:2", "training.device=cpu"])
    for member in member_configs(config):
        words = (TGT_WORDS, SRC_WORDS) if member.model.direction == "reverse" else (SRC_WORDS, TGT_WORDS)
        for step in (10, 20):
            write_random_checkpoint(member.run_dir / "checkpoints" / f"step_{step:06d}.pt",
                                    replace(member, seed=member.seed + step), *words, step=step)
        write_random_checkpoint(member.run_dir / "checkpoints" / "best.pt", member, *words, step=20)
    save_config(config, config.run_dir / "config.yaml")
    write_manifest(config)
    return config


def snapshot(folder: Path) -> dict[str, int]:
    """Every file under `folder` with its modification time: what a reader must not change."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}


def test_resolving_reads_and_names_what_is_still_to_be_written(run):
    before = snapshot(run.run_dir)
    plan = resolve_plan(run)
    assert snapshot(run.run_dir) == before
    assert sorted(p.relative_to(run.run_dir).as_posix() for p in plan.pending) == [
        "checkpoints/average_last2.pt", "member2/checkpoints/average_last2.pt",
        "member3/checkpoints/average_last2.pt"]
    assert plan.checkpoint_sha256 == ("", "")
    written = plan_for(run)
    assert not written.pending and all(len(sha) == 64 for sha in written.checkpoint_sha256)
    assert all(len(model.sha256) == 64 for model in written.rescoring)
    assert resolve_plan(run).content() == written.content()


def test_two_spellings_of_a_run_share_one_average(run, monkeypatch):
    plan_for(run)
    written = snapshot(run.run_dir)
    monkeypatch.chdir(run.run_dir.parent.parent)
    relative = replace(run, runs_dir=os.path.relpath(run.runs_dir))
    again = plan_for(relative)
    assert snapshot(run.run_dir) == written  # nothing averaged again
    assert again.label == plan_for(run).label == "ensemble.average_last2.rerank"
    assert again.content() == plan_for(run).content()


def test_the_python_api_only_reads_until_asked_to_write(run):
    before = snapshot(run.run_dir)
    for constructor in (lambda: Translator.from_run(run.run_dir, device="cpu"),
                        lambda: Translator.from_config(run)):
        with pytest.raises(NMTError, match="average_last2.pt still to be written .*materialize_run"):
            constructor()
    assert snapshot(run.run_dir) == before
    plan = materialize_run(run.run_dir, device="cpu")  # the one call that writes
    assert not plan.pending
    after = snapshot(run.run_dir)
    assert Translator.from_run(run.run_dir, device="cpu").translate(["汤姆喜欢猫。"])
    assert snapshot(run.run_dir) == after


def test_the_server_answers_409_never_writes_and_loads_once_materialized(run):
    registry = RunRegistry(run.runs_dir, run.name, device="cpu")
    before = snapshot(run.run_dir)
    with TestClient(create_app(registry)) as client:
        registry._loading.join()  # the background load of the default run, which fails
        health = client.get("/api/health")
        assert health.status_code == 409 and "make eval" in health.json()["error"]
        answer = client.get("/api/translate", params={"text": "汤姆喜欢猫。"})
        assert answer.status_code == 409
        assert snapshot(run.run_dir) == before
        materialize_run(run.run_dir, device="cpu")
        assert client.get("/api/health").status_code == 200  # the failed load is tried again
        assert client.get("/api/translate", params={"text": "汤姆喜欢猫。"}).status_code == 200


def test_a_tuned_file_applies_only_to_the_checkpoints_it_was_tuned_on(run, caplog):
    shas = list(plan_for(run).checkpoint_sha256)
    tuned = {"search": {"length_penalty": 1.3}, "tuned_on": shas}
    tuned_path(run).write_text(yaml.safe_dump(tuned), encoding="utf-8")
    assert plan_for(run).search.length_penalty == 1.3
    tuned_path(run).write_text(yaml.safe_dump({**tuned, "tuned_on": ["0" * 64] * 2}),
                               encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        plan = plan_for(run)
    assert plan.tuned is None and plan.search.length_penalty == run.search.length_penalty
    assert "tuned on other checkpoints" in caplog.text and "make tune" in caplog.text


def test_an_unreadable_saved_config_is_an_error_not_a_stand_in(run):
    (run.run_dir / "config.yaml").write_text("model: [unclosed", encoding="utf-8")
    with pytest.raises(NMTError, match="config.yaml: the run's saved config is unreadable"):
        resolve_plan(run)
    with pytest.raises(NMTError, match="config.yaml"):
        run_plan(run.run_dir)
