"""Corpus forms (nmt/config/sources.py), reading them (nmt/data/sources.py), and given dev/test
sets with the leak check (prepare)."""

import dataclasses
import gzip
import lzma
from collections import Counter

import pytest
import yaml

from helpers import REPO, tiny_corpus_pairs
from nmt.config.loader import build_config
from nmt.config.schema import Config
from nmt.config.sources import (PlainTextPair, Sources, TatoebaTsv, TsvSource, parse_sources)
from nmt.data.prepare import prepare
from nmt.data.sources import read_source
from nmt.errors import NMTError
from nmt.evaluation.evaluate import read_split
from nmt.io import read_lines

PAIRS = [("汤姆喜欢猫。", "Tom likes cats."), ("我饿了。", "I'm hungry."), ("你好。", "Hello.")]


def write(path, lines, compress=None):
    data = "".join(f"{line}\n" for line in lines).encode()
    opener = {"gz": gzip.compress, "xz": lzma.compress, None: lambda d: d}[compress]
    path.write_bytes(opener(data))
    return path


def read(value):
    skipped, sums = Counter(), {}
    pairs = [pair for source in parse_sources(value)
             for pair in read_source(source, skipped, sums)]
    return [(p.zh, p.en) for p in pairs], skipped, sums


@pytest.mark.parametrize("compress", [None, "gz", "xz"])
def test_a_pair_of_plain_files_plain_or_compressed(tmp_path, compress):
    # The names say nothing of the compression: the first bytes do.
    zh = write(tmp_path / "train.zh", [zh for zh, _ in PAIRS], compress)
    en = write(tmp_path / "train.en", [en for _, en in PAIRS], compress)
    pairs, skipped, sums = read({"zh": str(zh), "en": str(en)})
    assert pairs == PAIRS and not skipped
    assert set(sums) == {str(zh), str(en)}  # the checksum of the bytes on disk, read once


@pytest.mark.parametrize("compress", [None, "gz", "xz"])
def test_tatoeba_tsv_and_chosen_columns(tmp_path, compress):
    tatoeba = write(tmp_path / "cmn.txt", [f"{en}\t{zh}\tcredit" for zh, en in PAIRS], compress)
    assert read(str(tatoeba))[0] == PAIRS
    mine = write(tmp_path / "mine.tsv", [f"id{i}\t{zh}\tx\t{en}" for i, (zh, en) in enumerate(PAIRS)],
                 compress)
    assert read({"tsv": str(mine), "zh_column": 2, "en_column": 4})[0] == PAIRS


def test_several_corpora_are_read_in_order(tmp_path):
    first = write(tmp_path / "a.tsv", [f"{PAIRS[0][1]}\t{PAIRS[0][0]}"])
    zh = write(tmp_path / "b.zh", [PAIRS[1][0]])
    en = write(tmp_path / "b.en", [PAIRS[1][1]])
    assert read([str(first), {"zh": str(zh), "en": str(en)}])[0] == PAIRS[:2]


@pytest.mark.parametrize("zh_lines, en_lines", [(3, 2), (2, 3)])
def test_files_of_different_line_counts_are_refused_naming_both(tmp_path, zh_lines, en_lines):
    zh = write(tmp_path / "x.zh", [zh for zh, _ in PAIRS][:zh_lines])
    en = write(tmp_path / "x.en", [en for _, en in PAIRS][:en_lines])
    with pytest.raises(NMTError, match=rf"x\.zh has {zh_lines} lines but .*x\.en has {en_lines}"):
        read({"zh": str(zh), "en": str(en)})


def test_blank_and_one_sided_lines_of_plain_files_are_skipped_and_counted(tmp_path):
    zh = write(tmp_path / "x.zh", ["你好。", "", "", "我饿了。"])
    en = write(tmp_path / "x.en", ["Hello.", "", "Lonely.", "I'm hungry."])
    pairs, skipped, _ = read({"zh": str(zh), "en": str(en)})
    assert pairs == [("你好。", "Hello."), ("我饿了。", "I'm hungry.")]
    assert skipped == {"blank_line": 1, "empty_side": 1}


def test_a_truncated_gzip_file_is_a_clear_error(tmp_path):
    path = tmp_path / "cut.tsv.gz"
    path.write_bytes(gzip.compress(b"Hello.\t\xe4\xbd\xa0\xe5\xa5\xbd\n" * 1000)[:-30])
    with pytest.raises(NMTError, match=r"cut\.tsv\.gz: cannot read it"):
        read(str(path))


@pytest.mark.parametrize("value, message", [
    ({"zh": "a.zh"}, r"data\.corpus has the keys \['zh'\]"),
    ({"tsv": "a.tsv", "zh_column": 0}, r"data\.corpus: zh_column and en_column must be"),
    ({"tsv": "a.tsv", "zh_column": 2, "en_column": 2}, r"data\.corpus: .*two different column"),
    ([], r"data\.corpus is an empty list"),
    (None, r"data\.corpus is null; name the training corpus"),
    ({"tsv": 3}, r"data\.corpus: tsv must be a file path"),
    (["a.tsv", 5], r"data\.corpus\[1\] = 5: not a corpus"),
])
def test_a_bad_corpus_value_is_a_config_error_naming_the_key(value, message):
    with pytest.raises(NMTError, match=rf"test\.yaml: {message}"):
        build_config({"data": {"corpus": value}}, source="test.yaml")


def test_each_form_is_parsed_once_into_its_own_type():
    config = build_config({"data": {"corpus": ["cmn.txt", {"tsv": "mine.tsv", "zh_column": 3},
                                               {"zh": "a.zh", "en": "a.en"}],
                                    "dev": {"tsv": "dev.tsv"}}})
    assert config.data.corpus == Sources((TatoebaTsv("cmn.txt"), TsvSource("mine.tsv", 3, None),
                                          PlainTextPair("a.zh", "a.en")), listed=True)
    assert (config.data.corpus.items[1].zh_index, config.data.corpus.items[1].en_index) == (2, 0)
    assert config.data.dev == Sources((TsvSource("dev.tsv"),)) and config.data.test is None
    assert [str(p) for p in config.data.corpus.files()] == ["cmn.txt", "mine.tsv", "a.zh", "a.en"]


@pytest.mark.parametrize("value", [
    "data/raw/cmn-eng/cmn.txt", "./odd//path.tsv", ["one.tsv"], {"tsv": "t.tsv"},
    {"tsv": "t.tsv", "zh_column": 2, "en_column": 1}, {"zh": "a.zh", "en": "a.en"},
    [{"zh": "a.zh", "en": "a.en"}, "b.tsv", {"en_column": 4, "tsv": "c.tsv"}],
])
def test_a_source_saves_as_it_was_written(value, tmp_path):
    config = build_config({"data": {"corpus": value, "test": value}})
    assert config.to_dict()["data"]["corpus"] == config.to_dict()["data"]["test"] == value
    # what a run saves (config.yaml), a checkpoint holds, and an override writes reads back the same
    assert build_config(config.to_dict()) == config
    override = yaml.safe_load(str(config.data.corpus))
    assert build_config({"data": {"corpus": override}}).data.corpus == config.data.corpus


# The prepared-data folders of existing configs, named before the sources had types of their own:
# the same config must find its folder again.
DATA_HASHES = [
    ({}, "255ea2d1b415"),
    ({"corpus": {"zh": "wmt/train.zh.gz", "en": "wmt/train.en.gz"},
      "dev": {"zh": "wmt/newsdev2017.zh", "en": "wmt/newsdev2017.en"},
      "test": {"zh": "wmt/newstest2017.zh", "en": "wmt/newstest2017.en"}}, "8846ca373b61"),
    ({"corpus": [{"zh": "c/train.zh.gz", "en": "c/train.en.gz"},
                 {"tsv": "extra.tsv", "zh_column": 2, "en_column": 1}, "./data//x.txt"],
      "dev": {"tsv": "d.tsv"}, "test": ["t.tsv"]}, "6013b1243f24"),
]


@pytest.mark.parametrize("data, expected", DATA_HASHES)
def test_the_data_hash_of_a_config_is_what_it_was(data, expected):
    assert build_config({"data": data}).data_hash() == expected


def test_the_default_config_finds_its_prepared_data_again():
    data = yaml.safe_load((REPO / "configs" / "tatoeba.yaml").read_text(encoding="utf-8"))["data"]
    assert build_config({"data": data}).data_hash() == "25245e3ba989"
    assert Config().data.corpus == Sources((TatoebaTsv("data/raw/cmn-eng/cmn.txt"),))


def with_data(config, **changes):
    return dataclasses.replace(config, data=dataclasses.replace(config.data, **changes))


def test_given_dev_and_test_sets_replace_the_carved_ones_and_leaks_are_dropped(smoke_config,
                                                                               tmp_path):
    pairs = sorted(set(tiny_corpus_pairs(200)))
    train = write(tmp_path / "train.tsv", [f"{en}\t{zh}" for en, zh in pairs])
    # A given test set: its first pair also in the corpus (a leak), one pair twice (a test set
    # is scored whole: no dedup), one long sentence (no length filter).
    long = ("长" * 80, " ".join(["long"] * 80))
    test_pairs = [(pairs[0][1], pairs[0][0]), ("新的一句。", "A new one."), ("新的一句。", "A new one."), long]
    test_zh = write(tmp_path / "test.zh.gz", [zh for zh, _ in test_pairs], "gz")
    test_en = write(tmp_path / "test.en.gz", [en for _, en in test_pairs], "gz")
    # The dev set shares only an English sentence with the corpus (a different Chinese one).
    dev = write(tmp_path / "dev.tsv", [f"x\t{pairs[1][0]}\t不同的中文。", "y\t Dev only.\t只在开发集。"])
    config = with_data(smoke_config, corpus=parse_sources(str(train)), max_pairs=None,
                       test=parse_sources({"zh": str(test_zh), "en": str(test_en)}),
                       dev=parse_sources({"tsv": str(dev), "zh_column": 3, "en_column": 2}))
    prepared = prepare(config)
    manifest = prepared.manifest
    assert manifest["given"] == ["dev", "test"]
    assert manifest["splits"] == {"train": len(pairs) - 2, "dev": 2, "test": 4}
    assert manifest["counts"]["leaked_into_test"] == 1 and manifest["counts"]["leaked_into_dev"] == 1
    assert read_lines(prepared.text("test", "en")) == [en for _, en in test_pairs]
    # what `make eval` scores: the given test set whole, in its order
    assert read_split(prepared, "test") == ([zh for zh, _ in test_pairs], [en for _, en in test_pairs])
    assert read_lines(prepared.text("dev", "zh")) == ["不同的中文。", "只在开发集。"]
    train_en = set(read_lines(prepared.text("train", "en")))
    assert pairs[0][0] not in train_en and pairs[1][0] not in train_en
    # Only test is given: dev is carved out of the corpus as usual.
    carved = prepare(with_data(config, dev=None))
    assert carved.manifest["given"] == ["test"] and carved.manifest["splits"]["dev"] > 0


def test_an_edited_input_is_noticed_and_an_untouched_one_is_not_read(smoke_config, tmp_path,
                                                                     monkeypatch):
    import nmt.data.prepare as stage

    corpus = write(tmp_path / "c.tsv", [f"{en}\t{zh}" for en, zh in tiny_corpus_pairs(200)])
    config = with_data(smoke_config, corpus=parse_sources(str(corpus)))
    first = prepare(config)
    read_whole = []
    monkeypatch.setattr(stage, "_sha256", lambda path: read_whole.append(path))
    assert prepare(config).dir == first.dir and read_whole == []  # size and mtime: unchanged
    monkeypatch.undo()
    write(corpus, [f"{en}\t{zh}" for en, zh in tiny_corpus_pairs(200)] + ["One more.\t再来一个。"])
    prepare(config)
    assert first.manifest["counts"]["pairs_read"] == 201
