"""Translator: one output line per input line on awkward input, checkpoints, batching, order."""

from __future__ import annotations

import logging
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO, as_family
from nmt.config.schema import Config
from nmt.decoding.translate import translate_token_ids
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.model import MAX_SOURCE_TOKENS


AWKWARD = [
    "汤姆喜欢猫。",
    "",
    "   ",
    "\t \u3000",
    "猫" * 500,  # far longer than anything seen in training
    "Tom has 3 DVDs and 10,000 dollars.",
    "１２３ＡＢＣ",  # full-width digits and letters
    "😀🐱👍",
    "學習中文很難。",  # traditional characters
    "汤姆\u200b喜欢猫\x07",  # zero-width space, a control character
    "\ufeff玛丽",
    "a" * 300,
]


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


@pytest.fixture
def checkpoint(tmp_path: Path, smoke: Config) -> Path:
    return write_random_checkpoint(smoke.run_dir / "checkpoints" / "best.pt", smoke)


def test_every_line_gets_exactly_one_output(checkpoint, caplog):
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    with caplog.at_level(logging.WARNING, logger="nmt.decoding.translator"):
        out = translator.translate(AWKWARD)
    assert len(out) == len(AWKWARD)
    for line, translation in zip(AWKWARD, out):
        assert isinstance(translation.text, str) and "\n" not in translation.text
        if not line.strip():
            assert translation.text == "" and translation.tokens == [] and translation.n_best == []
        else:
            assert translation.src_tokens
    assert len(out[4].src_tokens) == MAX_SOURCE_TOKENS
    assert "line 5" in caplog.text and "first 200" in caplog.text
    assert translator.progress["step"] == 7


def test_blank_lines_do_not_run_the_model(checkpoint):
    translator = Translator.from_checkpoint(checkpoint, device="cpu")

    def fail(*args):
        raise AssertionError("the model ran on a blank line")

    translator.model.encode = fail
    assert [t.text for t in translator.translate(["", "  ", "\t"])] == ["", "", ""]


def test_batching_and_sorting_keep_the_input_order(checkpoint, smoke):
    lines = ["汤姆喜欢猫。", "猫", "玛丽喜欢狗和书。汤姆喜欢猫。", "", "狗。", "Tom 3"]
    small = replace(smoke.search, batch_size=2)
    translator = Translator.from_checkpoint(checkpoint, search=small, device="cpu")
    together = translator.translate(lines)
    alone = [translator.translate([line])[0] for line in lines]
    assert [t.text for t in together] == [t.text for t in alone]
    assert [t.src_tokens for t in together] == [translator.segment(line) for line in lines]


def test_n_best_and_attention(checkpoint, smoke):
    search = replace(smoke.search, beam_size=3, n_best=2)
    translator = Translator.from_checkpoint(checkpoint, search=search, device="cpu",
                                            keep_attention=True)
    translation = translator.translate(["汤姆喜欢猫。"])[0]
    assert len(translation.n_best) == 2
    assert translation.n_best[0] == (translation.text, translation.score)
    assert translation.n_best[0][1] >= translation.n_best[1][1]
    rows, cols = translation.attention.shape
    assert (rows, cols) == (len(translation.attention_labels()), len(translation.src_tokens))
    assert torch.allclose(torch.from_numpy(translation.attention).sum(1), torch.ones(rows))


def test_missing_corrupt_and_incompatible_checkpoints(tmp_path, smoke, checkpoint):
    with pytest.raises(NMTError, match="not found"):
        Translator.from_checkpoint(tmp_path / "nope.pt")
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(b"\x00not a checkpoint" * 10)
    with pytest.raises(NMTError, match="not a readable checkpoint"):
        Translator.from_checkpoint(corrupt)
    foreign = tmp_path / "foreign.pt"
    torch.save({"weights": torch.zeros(3)}, foreign)
    with pytest.raises(NMTError, match="not a checkpoint of this project"):
        Translator.from_checkpoint(foreign)
    # Weights of one size, a config that describes another.
    state = torch.load(checkpoint, weights_only=True)
    state["config"]["model"]["rnn"]["decoder_hidden"] = 48
    mismatched = tmp_path / "mismatched.pt"
    torch.save(state, mismatched)
    with pytest.raises(NMTError, match="do not fit"):
        Translator.from_checkpoint(mismatched)
    del state["model"]
    torch.save(state, mismatched)
    with pytest.raises(NMTError, match="incompatible"):
        Translator.from_checkpoint(mismatched)


def test_replace_unk_needs_attention(tmp_path, smoke):
    plain = replace(smoke, model=as_family(smoke.model, attention="none"))
    path = write_random_checkpoint(tmp_path / "plain.pt", plain)
    with pytest.raises(NMTError, match="replace_unk"):
        Translator.from_checkpoint(path, search=replace(plain.search, replace_unk=True))


def test_translate_token_ids_for_training(checkpoint, smoke):
    translator = Translator.from_checkpoint(checkpoint, device="cpu")
    model = translator.model.train()  # as training leaves it: dropout on
    ids = [[4, 5, 6, 7], [], [8], [4] * 30]
    greedy = replace(smoke.search, beam_size=1)
    first = translate_token_ids(model, ids, greedy, "cpu")
    second = translate_token_ids(model, ids, greedy)
    assert model.training  # the mode is given back
    assert [h.tokens for h in first] == [h.tokens for h in second]  # dropout was off
    assert first[1].tokens == [] and first[1].attention is None
    assert all(h.attention is not None and h.attention.shape[1] == len(src)
               for h, src in zip(first, ids) if src)


def _run_script(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "translate.py"), *args],
                          input=stdin, capture_output=True, text=True, check=False, encoding="utf-8",
                          timeout=120, cwd=REPO)


@pytest.mark.e2e
def test_script_files_attention_and_errors(tmp_path, smoke, checkpoint):
    source = tmp_path / "in.zh"
    source.write_text("汤姆喜欢猫。\n\n玛丽喜欢狗。\n😀\n", encoding="utf-8")
    output, plots = tmp_path / "out.en", tmp_path / "plots"
    overrides = [f"runs_dir={smoke.runs_dir}", "training.device=cpu"]
    done = _run_script(str(REPO / "configs" / "smoke.yaml"), *overrides, "--input", str(source),
                       "--output", str(output), "--attention", str(plots))
    assert done.returncode == 0, done.stderr
    assert len(output.read_text(encoding="utf-8").split("\n")) == 4 + 1  # 4 lines, final newline
    assert output.read_text(encoding="utf-8").split("\n")[1] == ""
    assert sorted(p.name for p in plots.iterdir()) == [
        "0001.json", "0001.png", "0003.json", "0003.png", "0004.json", "0004.png"]

    in_workers = tmp_path / "workers.en"  # one sentence a batch, the batches shared by 2 workers
    done = _run_script(str(REPO / "configs" / "smoke.yaml"), *overrides, "search.batch_size=1",
                       "search.workers=2", "--input", str(source), "--output", str(in_workers))
    assert done.returncode == 0, done.stderr
    assert in_workers.read_text(encoding="utf-8") == output.read_text(encoding="utf-8")

    piped = _run_script(str(REPO / "configs" / "smoke.yaml"), *overrides, stdin="汤姆\n\n猫\n")
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout.split("\n")) == 3 + 1

    missing = _run_script(str(REPO / "configs" / "smoke.yaml"), *overrides, "--checkpoint",
                          str(tmp_path / "none.pt"), stdin="猫\n")
    assert missing.returncode == 2
    assert missing.stderr.startswith("error: ") and "Traceback" not in missing.stderr


def test_search_workers_give_the_same_translations_in_order(checkpoint, smoke):
    """search.workers = 2: batches searched in two forked processes, merged back in input order."""
    lines = ["汤姆喜欢猫。", "猫", "玛丽喜欢狗和书。汤姆喜欢猫。", "", "狗。", "Tom 3", "书。", "猫狗"]

    def translate(workers: int):
        search = replace(smoke.search, batch_size=2, beam_size=3, n_best=2, workers=workers)
        translator = Translator.from_checkpoint(checkpoint, search=search, device="cpu",
                                                keep_attention=True)
        seen = []
        return translator.translate(lines, progress=seen.append), seen

    (one, one_progress), (two, two_progress) = translate(1), translate(2)
    assert [t.n_best for t in two] == [t.n_best for t in one]
    for a, b in zip(one, two):
        assert (a.attention is None) == (b.attention is None)
        if a.attention is not None:
            assert np.allclose(a.attention, b.attention)
    assert sum(one_progress) == sum(two_progress) == len(lines) - 1  # the blank line is not searched


@pytest.mark.parametrize("workers", [1, 2])
def test_search_bf16_decodes_under_autocast_where_the_search_runs(checkpoint, smoke, monkeypatch,
                                                                  tmp_path, workers):
    """search.bf16 = true: each batch is searched (in a forked worker too) under bfloat16
    autocast; false: in float32. The outputs keep float32 attention either way."""
    import nmt.decoding.translate as translate_module

    seen, search = tmp_path / "autocast", translate_module.search

    def recording_search(*args, **kwargs):
        with seen.open("a") as file:  # a file: a forked worker's list would stay its own
            file.write(f"{torch.is_autocast_enabled('cpu')}\n")
        return search(*args, **kwargs)

    monkeypatch.setattr(translate_module, "search", recording_search)
    monkeypatch.setattr("nmt.decoding.plan_types.use_bf16", lambda setting, device, key: bool(setting))
    lines = ["汤姆喜欢猫。", "玛丽喜欢狗。", "猫狗"]
    for bf16 in (True, False):
        settings = replace(smoke.search, batch_size=1, workers=workers, bf16=bf16)
        translator = Translator.from_checkpoint(checkpoint, search=settings, device="cpu",
                                                keep_attention=True)
        found = translator.translate(lines)
        assert seen.read_text().split() == [str(bf16)] * len(lines)
        assert all(t.text for t in found) and all(t.attention.dtype == np.float32 for t in found)
        seen.unlink()
