"""data.clean: each filter on the pairs it is for, the counts and examples prepare keeps of what
they dropped, and the errors a user can meet."""

from __future__ import annotations

import json

import pytest

from helpers import REPO, write_tiny_corpus
from nmt.config.clean_schema import CleanConfig
from nmt.config.loader import load_config
from nmt.data.filters import PairFilter, chars_per_word, han_share, latin_share, reason_to_drop
from nmt.data.prepare import prepare
from nmt.errors import NMTError

ALL_ON = CleanConfig(min_han_share=0.6, min_latin_share=0.9, copies=True, min_chars_per_word=0.7,
                     max_chars_per_word=2.5, numbers=True, markup="drop", max_repeat=5)


@pytest.mark.parametrize("zh, en, reason", [
    ("汤姆喜欢猫。", "Tom likes cats.", None),  # clean
    ("Tom是我的老师。", "Tom is my teacher.", None),  # a Latin name in Chinese is fine
    ("我有3只猫。", "I have 3 cats.", None),
    ("我有三只猫。", "I have 3 cats.", None),  # a number written out on one side only
    ("Tom likes cats.", "Tom likes cats.", "han_share"),  # a copy of the English
    ("汤姆喜欢猫。", "汤姆喜欢猫。", "latin_share"),  # a copy of the Chinese
    ("トムはねこがすきです。", "Tom likes cats.", "han_share"),  # the wrong language
    ("汤姆喜欢猫。", "Том любит кошек.", "latin_share"),
    ("汤姆非常喜欢他的那只白色的猫。", "Tom", "chars_per_word"),  # truncated
    ("猫。", "Tom likes cats. Mary likes dogs. We like birds.", "chars_per_word"),  # concatenated
    ("我有3只猫。", "I have 4 cats.", "numbers"),
    ("汤姆喜欢猫。", '<a href="http://x.com">Tom likes cats.</a>', "markup"),
    ("汤姆喜欢猫哈哈哈哈哈哈哈哈。", "Tom likes cats.", "repeat"),
])
def test_each_filter_drops_its_noise_and_keeps_clean_pairs(zh, en, reason):
    assert reason_to_drop(zh, en, ALL_ON) == reason


def test_the_measures():
    assert han_share("トムはねこ") == 0 and han_share("汤姆") == 1 and han_share("Tom是") == 0.25
    assert latin_share("Том likes") == pytest.approx(5 / 8)
    assert chars_per_word("汤姆喜欢猫。", "Tom likes cats.") == pytest.approx(5 / 3)


def test_a_filter_counts_what_it_dropped_keeps_examples_and_strips_markup():
    pair_filter = PairFilter(CleanConfig(min_han_share=0.6, markup="strip"))
    assert pair_filter("汤姆喜欢猫。 http://x.com/a", "<b>Tom likes cats.</b>", "1") == (
        "汤姆喜欢猫。", "Tom likes cats.")
    assert pair_filter("Tom", "Tom", "2") is None
    assert pair_filter("<br>", "Tom", "3") is None  # nothing left once stripped
    assert pair_filter.counts() == {"dropped": {"han_share": 1, "markup": 1}, "markup_stripped": 2}
    assert pair_filter.examples == {"han_share": [("2", "Tom", "Tom")], "markup": [("3", "", "Tom")]}
    assert not PairFilter(CleanConfig()).active


def noisy_config(tmp_path, *overrides):
    corpus = write_tiny_corpus(tmp_path / "raw" / "cmn.txt")
    with corpus.open("a", encoding="utf-8") as file:  # noise after the clean pairs
        file.write("Tom likes cats.\tTom likes cats.\tcopy\n"
                   "I have 4 cats.\t我有3只猫。\tnumbers\n"
                   "Tom likes cats.\t汤姆喜欢猫哈哈哈哈哈哈哈哈。\trepeat\n")
    return load_config(REPO / "configs" / "smoke.yaml", [
        f"data.corpus={corpus}", f"data.prepared_dir={tmp_path / 'prepared'}", *overrides])


def test_prepare_counts_each_filter_and_keeps_examples_in_the_prepared_folder(tmp_path):
    config = noisy_config(tmp_path, "data.clean.min_han_share=0.6", "data.clean.numbers=true",
                          "data.clean.max_repeat=5")
    prepared = prepare(config)
    counts = json.loads(prepared.manifest_path.read_text(encoding="utf-8"))["counts"]
    assert counts["clean"]["dropped"] == {"han_share": 1, "numbers": 1, "repeat": 1}
    lines = (prepared.dir / "dropped" / "numbers.tsv").read_text(encoding="utf-8").splitlines()
    assert lines == ["202\t我有3只猫。\tI have 4 cats."]
    # no filter on: the prepared folder keeps the name it had before data.clean existed
    plain = noisy_config(tmp_path)
    assert "clean" not in json.dumps(plain.data_hash()) and plain.data_hash() != config.data_hash()


def test_a_corpus_dropped_whole_names_the_filter_and_a_bad_value_names_the_key(tmp_path):
    config = noisy_config(tmp_path, "data.clean.min_chars_per_word=50", "data.clean.max_repeat=5")
    with pytest.raises(NMTError, match=r"data.clean dropped every pair of the corpus, the "
                                       r"chars_per_word filter most \(202 of 203\)"):
        prepare(config)
    with pytest.raises(NMTError, match=r"data.clean.min_han_share = 1.5 is not allowed"):
        noisy_config(tmp_path, "data.clean.min_han_share=1.5")
    with pytest.raises(NMTError, match=r"data.clean.markup = 'erase' is not allowed; choose one of"):
        noisy_config(tmp_path, "data.clean.markup=erase")
