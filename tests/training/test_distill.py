"""Sequence-level knowledge distillation: the teachers' translations replace the training targets,
cached by content, one line per training line; the student trains on them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from helpers import REPO, write_tiny_corpus
from random_checkpoint import single_thread, write_random_checkpoint

import nmt.training.distill
import nmt.training.setup
from nmt.checkpoints.choose import load_ensemble
from nmt.checkpoints.file import load_checkpoint
from nmt.config.loader import load_config
from nmt.data.prepare import prepare
from nmt.data.vocab import SPECIALS, Vocab
from nmt.decoding.translate import decode_ids
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.training.distill import distilled_targets, teacher_search
from nmt.training.loop import train


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """configs/smoke.yaml on a tiny corpus, prepared once for the module (segmenting is the
    slow part); the distillation caches of the tests differ by their teachers."""
    root = tmp_path_factory.mktemp("distill")
    corpus = write_tiny_corpus(root / "raw" / "cmn.txt")
    config = load_config(REPO / "configs" / "smoke.yaml", [
        f"data.corpus={corpus}", f"data.prepared_dir={root / 'prepared'}",
        f"runs_dir={root / 'runs'}", "training.distill_beam_size=2", "training.device=cpu"])
    return config, prepare(config)


def with_training(config, **changes):
    return dataclasses.replace(config, training=dataclasses.replace(config.training, **changes))


def write_teacher(path: Path, config, prepared, seed: int) -> Path:
    """A random model on the prepared vocabularies: a teacher of this run's data."""
    words = {lang: Vocab.load(prepared.vocab(lang)).itos[len(SPECIALS):] for lang in ("zh", "en")}
    return write_random_checkpoint(path, dataclasses.replace(config, seed=seed),
                                   src_words=words["zh"], tgt_words=words["en"])


def count_translations(monkeypatch) -> list[int]:
    """Spy on the teacher's search: one entry (the number of sentences) per decode_ids call."""
    calls, original = [], nmt.training.distill.decode_ids
    monkeypatch.setattr(nmt.training.distill, "decode_ids",
                        lambda model, ids, *args, **kwargs: calls.append(len(ids))
                        or original(model, ids, *args, **kwargs))
    return calls


def test_the_teacher_translates_every_training_line(base, tmp_path):
    config, prepared = base
    teacher = write_teacher(tmp_path / "teacher.pt", config, prepared, seed=11)
    config = with_training(config, distill_from=[str(teacher)])
    with single_thread():
        path = distilled_targets(config, prepared)
    lines, gold = read_lines(path), read_lines(prepared.tokens("train", "en"))
    assert len(lines) == len(gold) and path.name == "train.en.tok"
    assert path.parent.parent == prepared.dir / "distill"
    assert lines != gold, "the targets are the teacher's, not the references"

    model, _, src_vocab, tgt_vocab, _ = load_ensemble([teacher])
    sources = [line.split() for line in read_lines(prepared.tokens("train", "zh"))]
    with single_thread():  # the same batches as distillation: the same numbers
        found = decode_ids(model, [src_vocab.encode(s) for s in sources], teacher_search(config))
    expected = [" ".join(tgt_vocab.decode(hyps[0].tokens)) or reference
                for hyps, reference in zip(found, gold)]
    assert lines == expected
    for i in (0, len(lines) // 2):  # one sentence alone gives the same output as in its batch
        [hyps] = decode_ids(model, [src_vocab.encode(sources[i])], teacher_search(config))
        assert lines[i] == (" ".join(tgt_vocab.decode(hyps[0].tokens)) or gold[i])

    manifest = json.loads((path.parent / "manifest.json").read_text())
    assert manifest["teachers"][0]["path"] == str(teacher)
    assert manifest["beam_size"] == 2 and manifest["sentences"] == len(gold)
    assert manifest["length_penalty"] == config.search.length_penalty and manifest["seconds"] >= 0


def test_a_second_call_finds_the_translations_cached(base, tmp_path, monkeypatch, caplog):
    config, prepared = base
    teacher = write_teacher(tmp_path / "teacher.pt", config, prepared, seed=12)
    config = with_training(config, distill_from=[str(teacher)])
    calls = count_translations(monkeypatch)
    with single_thread():
        first = distilled_targets(config, prepared)
    assert len(calls) == 1
    caplog.set_level("INFO", logger="nmt.training.distill")
    assert distilled_targets(config, prepared) == first
    assert len(calls) == 1, "a cache hit translates nothing"
    assert "already in" in caplog.text

    # A damaged file is noticed and made again.
    first.write_text(first.read_text()[:-20], encoding="utf-8")
    with single_thread():
        assert distilled_targets(config, prepared) == first
    assert len(calls) == 2 and len(read_lines(first)) == len(read_lines(prepared.tokens("train", "en")))


def test_the_cache_follows_the_teachers_content_and_the_beam_size(base, tmp_path, monkeypatch):
    config, prepared = base
    teacher = write_teacher(tmp_path / "teacher.pt", config, prepared, seed=13)
    config = with_training(config, distill_from=[str(teacher)])
    with single_thread():
        first = distilled_targets(config, prepared).parent
        # the same path, other weights (retrained): another cache folder
        write_teacher(teacher, config, prepared, seed=14)
        retrained = distilled_targets(config, prepared).parent
        wider = distilled_targets(with_training(config, distill_beam_size=3), prepared).parent
        # the same content under another name: the same folder
        copy = tmp_path / "copy.pt"
        copy.write_bytes(teacher.read_bytes())
        calls = count_translations(monkeypatch)
        assert distilled_targets(with_training(config, distill_from=[str(copy)]),
                                 prepared).parent == retrained
    assert len({first, retrained, wider}) == 3 and calls == []


def test_two_teachers_translate_as_an_ensemble(base, tmp_path, monkeypatch):
    config, prepared = base
    one = write_teacher(tmp_path / "one.pt", config, prepared, seed=15)
    two = write_teacher(tmp_path / "two.pt", config, prepared, seed=16)
    models = []
    original = nmt.training.distill.load_ensemble
    monkeypatch.setattr(nmt.training.distill, "load_ensemble",
                        lambda paths: models.append(original(paths)[0]) or original(paths))
    with single_thread():
        alone = distilled_targets(with_training(config, distill_from=[str(one)]), prepared)
        both = distilled_targets(with_training(config, distill_from=[str(one), str(two)]), prepared)
    assert alone.parent != both.parent
    assert type(models[-1]).__name__ == "Ensemble" and len(models[-1].members) == 2
    assert len(read_lines(both)) == len(read_lines(alone))
    assert read_lines(both) != read_lines(alone)
    manifest = json.loads((both.parent / "manifest.json").read_text())
    assert [t["path"] for t in manifest["teachers"]] == [str(one), str(two)]


def test_a_missing_teacher_is_named(base, tmp_path):
    config, prepared = base
    missing = tmp_path / "nowhere.pt"
    with pytest.raises(NMTError, match=r"training\.distill_from.*nowhere\.pt"):
        distilled_targets(with_training(config, distill_from=[str(missing)]), prepared)


def test_a_teacher_of_other_data_settings_is_refused(base, tmp_path):
    config, prepared = base
    other = dataclasses.replace(config, data=dataclasses.replace(config.data, lowercase=True))
    teacher = write_teacher(tmp_path / "teacher.pt", other, prepared, seed=17)
    with pytest.raises(NMTError, match=r"training\.distill_from.*data\.lowercase"):
        distilled_targets(with_training(config, distill_from=[str(teacher)]), prepared)
    foreign = write_random_checkpoint(tmp_path / "foreign.pt", config)  # other vocabularies
    with pytest.raises(NMTError, match=r"training\.distill_from.*vocabulary"):
        distilled_targets(with_training(config, distill_from=[str(foreign)]), prepared)


def test_the_config_keys(base):
    config, _ = base
    assert config.training.distill_beam_size == 2
    assert load_config(REPO / "configs" / "smoke.yaml").training.distill_from == []
    loaded = load_config(REPO / "configs" / "smoke.yaml", ["training.distill_from=[a.pt, b.pt]"])
    assert loaded.training.distill_from == ["a.pt", "b.pt"]
    with pytest.raises(NMTError, match="training.distill_beam_size"):
        load_config(REPO / "configs" / "smoke.yaml", ["training.distill_beam_size=0"])


@pytest.mark.e2e
def test_the_student_trains_on_the_distilled_targets(base, tmp_path, monkeypatch):
    config, prepared = base
    teacher = write_teacher(tmp_path / "teacher.pt", config, prepared, seed=18)
    config = with_training(dataclasses.replace(config, runs_dir=str(tmp_path / "runs")),
                           distill_from=[str(teacher)], max_steps=4, validate_every=100,
                           checkpoint_every=100)
    read, original = [], nmt.training.setup.load_examples

    def spy(src, tgt, *args, **kwargs):
        examples = original(src, tgt, *args, **kwargs)
        read.append((Path(tgt), examples))
        return examples

    monkeypatch.setattr(nmt.training.setup, "load_examples", spy)
    run_dir = train(config)

    (targets, examples), (dev_targets, _) = read
    assert targets.parent.parent == prepared.dir / "distill", "training reads the teacher's targets"
    assert dev_targets == prepared.tokens("dev", "en"), "the dev set keeps its references"
    tgt_vocab = Vocab.load(prepared.vocab("en"))
    distilled = {tuple(tgt_vocab.encode(line.split())) for line in read_lines(targets)}
    assert all(tuple(example.tgt) in distilled for example in examples)
    gold = {tuple(tgt_vocab.encode(line.split())) for line in read_lines(prepared.tokens("train", "en"))}
    assert any(tuple(example.tgt) not in gold for example in examples)
    assert load_checkpoint(run_dir / "checkpoints" / "last.pt")["progress"]["step"] == 4
