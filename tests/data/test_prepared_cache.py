"""The prepared folder checks itself on every use and is only ever complete or absent."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

import nmt.data.prepare
from nmt.data.batching import load_examples
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write_lines
from nmt.data.prepare import load_prepared, prepare


def partial_folders(config) -> list[str]:
    return sorted(p.name for p in config_dir(config).iterdir() if p.name.startswith("."))


def config_dir(config) -> Path:
    return Path(config.data.prepared_dir)


def test_the_manifest_records_every_file_the_build_wrote(smoke_config, monkeypatch):
    """Not a fixed list: a file a later step adds (a subword model, say) is checked too."""
    build = nmt.data.prepare._build

    def with_extra_file(config, prepared):
        manifest = build(config, prepared)
        atomic_write_lines(prepared.dir / "subword" / "model.zh", ["a", "b"])
        return manifest

    monkeypatch.setattr(nmt.data.prepare, "_build", with_extra_file)
    prepared = prepare(smoke_config)
    files = prepared.manifest["files"]
    assert set(files) == {p.name for p in prepared.files()} | {"subword/model.zh"}
    assert files["subword/model.zh"]["lines"] == 2 and files["subword/model.zh"]["bytes"] == 4
    train = files["train.tok.en"]
    assert train["lines"] == prepared.manifest["splits"]["train"]
    assert len(train["sha256"]) == 64
    assert partial_folders(smoke_config) == []


@pytest.mark.parametrize("damage", ["truncate", "same_size", "delete_extra"])
def test_a_damaged_file_is_named_and_prepared_again(smoke_config, caplog, damage, monkeypatch):
    build = nmt.data.prepare._build

    def with_extra_file(config, prepared):
        manifest = build(config, prepared)
        atomic_write_lines(prepared.dir / "extra.model", ["x"])
        return manifest

    monkeypatch.setattr(nmt.data.prepare, "_build", with_extra_file)
    prepared = prepare(smoke_config)
    tokens = prepared.tokens("train", "en")
    original = tokens.read_bytes()
    if damage == "truncate":  # an interrupted copy, a full disk
        tokens.write_bytes(original[: len(original) // 2])
        expected = rf"train\.tok\.en has \d+ lines and {len(original) // 2} bytes, but \d+ lines"
    elif damage == "same_size":
        tokens.write_bytes(original.replace(b"Tom", b"Tim"))
        expected = r"train\.tok\.en has the prepared size but not the prepared content"
    else:
        (prepared.dir / "extra.model").unlink()
        expected = r"extra\.model is missing"
    with pytest.raises(NMTError, match=expected + ".*make prepare"):
        load_prepared(smoke_config)
    with caplog.at_level(logging.WARNING, logger="nmt.data.prepare"):
        again = prepare(smoke_config)
    assert "preparing again" in caplog.text
    assert len([r for r in caplog.records if r.levelno == logging.WARNING]) == 1
    assert tokens.read_bytes() == original and again.dir == prepared.dir
    assert load_prepared(smoke_config) == prepared
    assert partial_folders(smoke_config) == []


def test_an_old_manifest_without_checksums_is_prepared_again(smoke_config, caplog):
    prepared = prepare(smoke_config)
    manifest = prepared.manifest
    del manifest["files"]
    prepared.manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="nmt.data.prepare"):
        assert "files" in prepare(smoke_config).manifest
    assert "records no file checksums" in caplog.text


def test_an_interrupted_prepare_leaves_no_folder_that_looks_finished(smoke_config, monkeypatch):
    build = nmt.data.prepare._build

    def dies_after_writing(config, prepared):
        build(config, prepared)  # every file written, the manifest not yet
        raise KeyboardInterrupt

    monkeypatch.setattr(nmt.data.prepare, "_build", dies_after_writing)
    with pytest.raises(KeyboardInterrupt):
        prepare(smoke_config)
    assert list(config_dir(smoke_config).iterdir()) == []
    with pytest.raises(NMTError, match="not prepared"):
        load_prepared(smoke_config)


def test_a_killed_prepares_partial_folder_is_cleaned_up(smoke_config):
    import socket

    root = config_dir(smoke_config)
    abandoned = root / f".{smoke_config.data_hash()}.partial-{socket.gethostname()}-999999999-x"
    abandoned.mkdir(parents=True)
    (abandoned / "train.zh").write_text("half\n")
    prepare(smoke_config)
    assert partial_folders(smoke_config) == []


def test_load_examples_refuses_files_of_different_lengths(smoke_config):
    """It used to end in `ValueError: zip() argument 2 is shorter than argument 1`."""
    prepared = prepare(smoke_config)
    src, tgt = prepared.tokens("train", "zh"), prepared.tokens("train", "en")
    lines = tgt.read_text(encoding="utf-8").split("\n")
    tgt.write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    vocab_zh, vocab_en = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    expected = f"{src} has {len(lines) - 1} lines but {tgt} has 10; the prepared data is damaged"
    with pytest.raises(NMTError, match=re.escape(expected)):
        load_examples(src, tgt, vocab_zh, vocab_en)
