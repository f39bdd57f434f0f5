"""The Python API: `from nmt import Translator`, from a run folder, a config or a checkpoint."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from random_checkpoint import single_thread, write_random_run
from nmt import Translator
from nmt.align.translated import align_lines
from nmt.config.loader import load_config
from nmt.errors import NMTError
from helpers import REPO


@pytest.fixture(autouse=True)
def one_thread():
    with single_thread():
        yield


def test_from_run_translates_with_attention_nbest_and_a_beam_per_call(tmp_path, smoke):
    run = write_random_run(tmp_path / "runs", "api", smoke)
    translator = Translator.from_run(run)
    assert translator.run_name == "api" and translator.architecture == "rnn"
    result = translator.translate(["汤姆喜欢猫。"], beam_size=3, nbest=2)[0]
    assert result.src_tokens == ["汤姆", "喜欢", "猫", "。"]
    assert isinstance(result.attention, np.ndarray) and result.attention.shape[1] == 4
    assert len(result.attention) >= len(result.tokens) and len(result.n_best) == 2
    assert result.n_best[0][0] == result.text
    greedy = translator.translate(["汤姆喜欢猫。"], beam_size=1)[0]
    assert len(greedy.n_best) == 1 and translator.search.beam_size == smoke.search.beam_size
    assert translator.cross_attention(result) is None  # one attention: the heatmap is all


def test_a_moved_run_folder_and_the_other_ways_in(tmp_path, smoke):
    run = write_random_run(tmp_path / "runs", "api", smoke)
    moved = shutil.move(run, tmp_path / "elsewhere")
    by_run = Translator.from_run(moved).translate(["汤姆喜欢猫。"])[0]
    config = load_config(REPO / "configs" / "smoke.yaml", [f"runs_dir={tmp_path}", "name=elsewhere"])
    by_config = Translator.from_config(config).translate(["汤姆喜欢猫。"])[0]
    by_file = Translator.from_checkpoint(tmp_path / "elsewhere" / "checkpoints" / "best.pt",
                                         keep_attention=True).translate(["汤姆喜欢猫。"])[0]
    assert by_run.text == by_config.text == by_file.text
    with pytest.raises(NMTError, match="not a run folder"):
        Translator.from_run(tmp_path)


def test_a_transformer_gives_every_layer_and_head(tmp_path, smoke):
    translator = Translator.from_run(write_random_run(tmp_path / "runs", "tr", smoke, "transformer"))
    result = translator.translate(["汤姆喜欢猫。"])[0]
    layers = translator.cross_attention(result)  # (layers, heads, T, S)
    assert layers.shape == (1, 2, *result.attention.shape)
    np.testing.assert_allclose(layers[-1].mean(axis=0), result.attention, atol=1e-5)


def test_align_gives_pharaoh_links_in_characters_and_moses_tokens(tmp_path, smoke):
    translator = Translator.from_run(write_random_run(tmp_path / "runs", "api", smoke))
    links = align_lines(translator, ["汤姆喜欢猫。", "玛丽喜欢狗。"], ["Tom likes cats .", "Mary likes dogs ."])
    assert len(links) == 2
    for pair in links:  # 6 characters, 4 English tokens
        assert pair and all(0 <= i < 6 and 0 <= j < 4 for i, j in pair) and pair == sorted(pair)
    with pytest.raises(NMTError, match="2 Chinese lines but 1 English"):
        align_lines(translator, ["汤姆", "玛丽"], ["Tom"])
