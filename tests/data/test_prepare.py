import dataclasses
import json
import re
import subprocess
import sys

import pytest

import nmt.data.prepare
from nmt.config.sources import parse_sources
from nmt.data.normalize import normalize_zh
from nmt.data.split import SPLITS
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.data.prepare import load_prepared, prepare

from helpers import REPO, tiny_corpus_pairs

# Lines with the real file's quirks, appended to the tiny corpus: each kind of bad line once,
# and a pair that only normalization makes a duplicate of the corpus's first pair.
EXTRA = [b"", b"only one column", "\t汤姆来了。\tcredit".encode(),
         b"Bad \xff bytes.\t\xe5\x9d\x8f\xe3\x80\x82\tcredit",
         "Tom  likes cats.\t汤姆 喜欢猫。\tcredit".encode()]


@pytest.fixture
def messy_config(smoke_config, tmp_path):
    """The smoke config on the tiny corpus written with a BOM, CRLF line ends and bad lines."""
    lines = [f"{en}\t{zh}\tcredit".encode() for en, zh in tiny_corpus_pairs(200)] + EXTRA
    path = tmp_path / "messy.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(lines) + b"\r\n")
    return with_data(smoke_config, corpus=parse_sources(str(path)))


def with_data(config, **changes):
    return dataclasses.replace(config, data=dataclasses.replace(config.data, **changes))


def test_prepare_end_to_end_counts(messy_config):
    prepared = prepare(messy_config)
    manifest = prepared.manifest
    counts = manifest["counts"]
    exact_duplicates = 200 - len(set(tiny_corpus_pairs(200)))
    assert counts["lines_read"] == 205
    assert counts["skipped"] == {"blank_line": 1, "empty_side": 1, "invalid_utf8": 1,
                                 "wrong_columns": 1}
    assert counts["pairs_read"] == 201 and counts["beyond_max_pairs"] == 0
    assert counts["duplicates"] == exact_duplicates + 1  # + the one that normalization revealed
    assert counts["filtered_length"] == 0
    assert counts["pairs_kept"] == 201 - counts["duplicates"] == sum(manifest["splits"].values())
    assert manifest["splits"]["dev"] <= 40 and manifest["splits"]["test"] <= 40
    assert manifest["data_hash"] == messy_config.data_hash()
    assert prepared.dir.name == messy_config.data_hash()
    assert set(manifest["dev_oov_rate"]) == {"zh", "en"}
    for lang in ("zh", "en"):
        assert manifest["vocab"][lang] == len(Vocab.load(prepared.vocab(lang)))
        assert 0 <= manifest["dev_oov_rate"][lang] < 0.5


def test_prepared_files_are_aligned_clean_and_leak_free(messy_config):
    prepared = prepare(messy_config)
    with open(messy_config.data.corpus.files()[0], "rb") as corpus:
        raw_lines = corpus.read().split(b"\r\n")
    seen: dict[str, str] = {}
    for split in SPLITS:
        zh, en = read_lines(prepared.text(split, "zh")), read_lines(prepared.text(split, "en"))
        zh_tok, en_tok = (read_lines(prepared.tokens(split, lang)) for lang in ("zh", "en"))
        numbers = [int(n) for n in read_lines(prepared.source_lines(split))]
        assert len(zh) == len(en) == len(zh_tok) == len(en_tok) == len(numbers) > 0
        for i in range(len(zh)):
            raw_en, raw_zh, _ = raw_lines[numbers[i] - 1].decode("utf-8-sig").split("\t")
            assert (en[i], zh[i]) == (raw_en, normalize_zh(raw_zh))  # the line it came from
            assert zh_tok[i].replace(" ", "") == zh[i]  # segmentation only adds spaces
            assert not re.search("[０-９\r\ufeff]", zh[i] + en[i])
            for sentence in (zh[i], en[i]):
                assert seen.setdefault(sentence, split) == split, f"{sentence} leaks"


def test_second_prepare_does_no_work(messy_config, monkeypatch):
    prepared = prepare(messy_config)
    mtime = prepared.manifest_path.stat().st_mtime_ns

    def fail(*args):
        raise AssertionError("prepared again")

    monkeypatch.setattr(nmt.data.prepare, "_build", fail)
    again = prepare(messy_config)
    assert again.dir == prepared.dir and prepared.manifest_path.stat().st_mtime_ns == mtime
    # workers say how fast, not what: they reuse the same folder
    assert prepare(with_data(messy_config, workers=2)).dir == prepared.dir


def test_changed_settings_corpus_or_missing_files_prepare_again(messy_config):
    first = prepare(messy_config)
    lower = prepare(with_data(messy_config, lowercase=True))
    assert lower.dir != first.dir
    assert read_lines(lower.text("dev", "en")) == [
        s.lower() for s in read_lines(first.text("dev", "en"))]

    first.vocab("en").unlink()  # an interrupted or damaged folder
    assert prepare(messy_config).vocab("en").is_file()

    with open(messy_config.data.corpus.files()[0], "ab") as corpus:
        corpus.write("She likes tea.\t她喜欢茶。\tcredit\r\n".encode())
    assert prepare(messy_config).manifest["counts"]["lines_read"] == 206


@pytest.mark.e2e
def test_a_changed_user_dictionary_prepares_again(smoke_config, tmp_path):
    user_dict = tmp_path / "user.dict"
    user_dict.write_text("喜欢猫 100 v\n", encoding="utf-8")
    config = with_data(smoke_config, zh_user_dict=str(user_dict))
    assert "喜欢猫" in read_lines(prepare(config).vocab("zh"))
    user_dict.write_text("汤姆喜欢 100 v\n", encoding="utf-8")
    vocab = read_lines(prepare(config).vocab("zh"))
    assert "汤姆喜欢" in vocab and "喜欢猫" not in vocab


def test_max_pairs_keeps_the_first_valid_pairs(messy_config):
    config = with_data(messy_config, max_pairs=100, dev_size=10, test_size=10)
    counts = prepare(config).manifest["counts"]
    assert counts["pairs_read"] == 201 and counts["beyond_max_pairs"] == 101
    assert counts["pairs_kept"] == 100 - counts["duplicates"]


def test_length_filter_counts_both_sides(smoke_config):
    counts = prepare(with_data(smoke_config, max_length=4)).manifest["counts"]
    # "Tom likes cats ." has 4 tokens, "Tom has 3 books and 24 cats ." has 8.
    assert counts["filtered_length"] == sum(1 for en, _ in set(tiny_corpus_pairs(200))
                                            if en.startswith("Tom has "))


def test_char_level_segmentation(smoke_config):
    prepared = prepare(with_data(smoke_config, zh_level="char"))
    tokens = read_lines(prepared.tokens("train", "zh"))
    assert all(len(t) == 1 or t.isascii() for line in tokens for t in line.split())


def test_too_small_corpus_is_an_error(smoke_config):
    with pytest.raises(NMTError, match=r"data\.dev_size=100 and data\.test_size=40"):
        prepare(with_data(smoke_config, dev_size=100))


def test_load_prepared_before_prepare_says_what_to_run(smoke_config):
    with pytest.raises(NMTError, match=r"not prepared .*run `make prepare CONFIG="):
        load_prepared(smoke_config)
    prepared = prepare(smoke_config)
    assert load_prepared(smoke_config) == prepared
    assert load_prepared(smoke_config).manifest["splits"]["test"] > 0


def test_damaged_manifest_is_prepared_again(smoke_config):
    prepared = prepare(smoke_config)
    prepared.manifest_path.write_text("{not json", encoding="utf-8")
    assert json.loads(prepare(smoke_config).manifest_path.read_text())["data_hash"]


def test_paths_check_split_and_language(smoke_config):
    prepared = prepare(smoke_config)
    assert prepared.text("dev", "zh").name == "dev.zh"
    assert prepared.tokens("test", "en").name == "test.tok.en"
    assert prepared.vocab("zh").name == "vocab.zh"
    with pytest.raises(ValueError):
        prepared.text("valid", "zh")
    with pytest.raises(ValueError):
        prepared.vocab("fr")


@pytest.mark.e2e
def test_script_prints_summary_and_errors_without_traceback(smoke_config, tmp_path):
    script = [sys.executable, str(REPO / "scripts/prepare.py"), str(REPO / "configs/smoke.yaml")]
    data = smoke_config.data
    paths = [f"data.corpus={data.corpus}", f"data.prepared_dir={data.prepared_dir}"]
    ok = subprocess.run(script + paths, capture_output=True, text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "split train" in ok.stdout and "dev OOV" in ok.stdout
    bad = subprocess.run(script + [f"data.corpus={tmp_path / 'none.tsv'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: ") and "none.tsv: corpus file not found" in bad.stderr
    assert "Traceback" not in bad.stderr
    typo = subprocess.run(script + ["data.dev_sise=3"], capture_output=True, text=True,
                          cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean 'data.dev_size'" in typo.stderr


def test_a_cached_prepare_imports_no_segmenter(smoke_config, tmp_path):
    prepare(smoke_config)  # the cached run must stay well under a second: no jieba, no Moses
    code = ("import sys; from nmt.config.loader import load_config; from nmt.data.prepare import prepare; "
            f"prepare(load_config({str(REPO / 'configs/smoke.yaml')!r}, sys.argv[1:])); "
            "print(sorted({'jieba', 'sacremoses', 'torch'} & set(sys.modules)))")
    data = smoke_config.data
    result = subprocess.run([sys.executable, "-c", code, f"data.corpus={data.corpus}",
                             f"data.prepared_dir={data.prepared_dir}"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
