"""Corpus formats (nmt/data/sources.py) and given dev/test sets with the leak check (prepare)."""

import dataclasses
import gzip
import lzma
from collections import Counter

import pytest

from helpers import tiny_corpus_pairs
from nmt.config.loader import build_config
from nmt.data.prepare import prepare
from nmt.data.sources import parse_sources, read_source
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
    pairs = [pair for source in parse_sources(value, "data.corpus")
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
    (["a.tsv", 5], r"data\.corpus\[1\] = 5: not a corpus"),
])
def test_a_bad_corpus_value_is_a_config_error_naming_the_key(value, message):
    with pytest.raises(NMTError, match=rf"test\.yaml: {message}"):
        build_config({"data": {"corpus": value}}, source="test.yaml")


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
    config = with_data(smoke_config, corpus=str(train), max_pairs=None,
                       test={"zh": str(test_zh), "en": str(test_en)},
                       dev={"tsv": str(dev), "zh_column": 3, "en_column": 2})
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
    config = with_data(smoke_config, corpus=str(corpus))
    first = prepare(config)
    read_whole = []
    monkeypatch.setattr(stage, "_sha256", lambda path: read_whole.append(path))
    assert prepare(config).dir == first.dir and read_whole == []  # size and mtime: unchanged
    monkeypatch.undo()
    write(corpus, [f"{en}\t{zh}" for en, zh in tiny_corpus_pairs(200)] + ["One more.\t再来一个。"])
    prepare(config)
    assert first.manifest["counts"]["pairs_read"] == 201
