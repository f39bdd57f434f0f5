"""Distilling a teacher run (distill.*): its own decoding plan translates the training sources,
one hypothesis is kept per source, the worst by its channel model are left out, and the student
trains on the translations and the references together."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from random_checkpoint import write_random_members

import nmt.training.setup
from helpers import REPO
from nmt.config.loader import load_config
from nmt.data.prepare import prepare
from nmt.data.vocab import Vocab
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.training.distill_run import run_distilled_targets
from nmt.training.loop import train


@pytest.fixture
def teacher(tmp_path, tiny_corpus):
    """A run of the default's shape (two members and a channel member, random weights)."""
    (tmp_path / "teacher.yaml").write_text(
        f"extends: {REPO / 'configs' / 'smoke.yaml'}\nname: teacher\n"
        "training: {members: 2, channel_members: 1, device: cpu}\neval: {channel_weight: 0.5}\n"
        "search: {beam_size: 3}\n", encoding="utf-8")
    config = load_config(tmp_path / "teacher.yaml", [
        f"data.corpus={tiny_corpus}", f"data.prepared_dir={tmp_path / 'prepared'}",
        f"runs_dir={tmp_path / 'runs'}"])
    prepare(config)
    write_random_members(config)
    return config


def student(teacher, *overrides: str):
    return load_config(REPO / "configs" / "smoke.yaml", [
        f"data.corpus={teacher.data.corpus}", f"data.prepared_dir={teacher.data.prepared_dir}",
        f"runs_dir={teacher.runs_dir}", "name=student", "training.device=cpu",
        f"distill.teacher={teacher.run_dir}", *overrides])


def test_the_kept_line_is_one_of_the_teachers_n_best_and_the_worst_are_left_out(teacher):
    config = student(teacher, "distill.n_best=3", "distill.pick=chrf", "distill.drop_worst=0.2")
    prepared = prepare(config)
    lines = read_lines(run_distilled_targets(config, prepared))
    sources = read_lines(prepared.tokens("train", "zh"))
    assert len(lines) == len(sources)

    translator = Translator.from_run(teacher.run_dir, device="cpu", keep_attention=False)
    found = translator.decode([translator.src_vocab.encode(s.split()) for s in sources],
                              dataclasses.replace(translator.search, n_best=3))
    tgt = Vocab.load(prepared.vocab("en"))
    kept = [line for line in lines if line]
    assert all(line.split() in [tgt.decode(h.tokens) for h in hyps]
               for line, hyps in zip(lines, found) if line)
    assert len(lines) - len(kept) == pytest.approx(0.2 * len(lines), abs=2)
    manifest = json.loads((Path(run_distilled_targets(config, prepared)).parent /
                           "manifest.json").read_text())
    assert manifest["dropped_worst"] == len(lines) - len(kept)
    assert manifest["pick"] == "chrf" and manifest["teacher"] == str(teacher.run_dir)


def test_the_teachers_best_is_what_its_make_eval_decodes(teacher):
    config = student(teacher, "distill.n_best=2")
    prepared = prepare(config)
    lines = read_lines(run_distilled_targets(config, prepared))
    translator = Translator.from_run(teacher.run_dir, device="cpu", keep_attention=False)
    sources = read_lines(prepared.tokens("train", "zh"))
    best = translator.decode([translator.src_vocab.encode(s.split()) for s in sources])
    assert lines == [" ".join(translator.tgt_vocab.decode(h[0].tokens)) or gold for h, gold
                     in zip(best, read_lines(prepared.tokens("train", "en")))]


def test_a_teacher_without_a_channel_model_cannot_drop_by_it(teacher):
    (teacher.run_dir / "config.yaml").write_text(
        (teacher.run_dir / "config.yaml").read_text().replace("channel_weight: 0.5",
                                                              "channel_weight: 0.0"))
    config = student(teacher, "distill.drop_worst=0.1")
    with pytest.raises(NMTError, match="distill.drop_worst"):
        run_distilled_targets(config, prepare(config))


def test_drop_worst_reads_a_channel_model_the_teacher_weighs_0(teacher):
    """A channel model named in eval.rerank with weight 0 still scores every kept line, so
    drop_worst drops by it instead of silently dropping nothing."""
    channel = teacher.run_dir / "member3" / "checkpoints" / "best.pt"
    saved = teacher.run_dir / "config.yaml"
    saved.write_text(saved.read_text().replace("channel_weight: 0.5", "channel_weight: 0.0")
                     .replace("rerank: []", f"rerank: [{channel}]")
                     .replace("rerank_weights: []", "rerank_weights: [0.0]"))
    config = student(teacher, "distill.drop_worst=0.25")
    target = run_distilled_targets(config, prepare(config))
    manifest = json.loads((target.parent / "manifest.json").read_text())
    assert manifest["dropped_worst"] == pytest.approx(0.25 * manifest["translated"], abs=2)
    assert manifest["dropped_worst"] > 0


def test_the_teacher_reached_by_another_spelling_hits_the_same_cache(teacher, monkeypatch):
    """The cache is keyed by the teacher's content, not how its path is spelled: one set of
    averages, one distillation."""
    config = student(teacher, "distill.n_best=2")
    prepared = prepare(config)
    first = run_distilled_targets(config, prepared)
    written = first.stat().st_mtime_ns
    monkeypatch.chdir(teacher.runs_dir)
    spelled = student(teacher, "distill.n_best=2", f"distill.teacher=./{teacher.name}")
    assert run_distilled_targets(spelled, prepared) == first
    assert first.stat().st_mtime_ns == written


def test_a_missing_teacher_or_two_ways_to_distil_are_named(teacher, tmp_path):
    config = student(teacher, f"distill.teacher={tmp_path / 'nowhere'}")
    with pytest.raises(NMTError, match="distill.teacher: .*nowhere.* not a trained run"):
        run_distilled_targets(config, prepare(config))
    with pytest.raises(NMTError, match="distill.teacher .* training.distill_from"):
        student(teacher, "training.distill_from=[a.pt]")


@pytest.mark.e2e
def test_the_student_trains_on_references_and_translations(teacher, monkeypatch):
    config = student(teacher, "training.max_steps=2", "training.validate_every=100",
                     "training.checkpoint_every=100")
    read, original = [], nmt.training.setup.load_examples

    def spy(src, tgt, *args, **kwargs):
        read.append(Path(tgt))
        return original(src, tgt, *args, **kwargs)

    monkeypatch.setattr(nmt.training.setup, "load_examples", spy)
    train(config)
    prepared = prepare(config)
    assert read[0] == prepared.tokens("train", "en"), "the references first"
    assert read[1].parent.parent == prepared.dir / "distill", "then the teacher's lines"
