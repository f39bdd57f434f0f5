"""Subword units (data.subword): round trips, caching, the vocabulary cap, whole words for people."""

from __future__ import annotations

import dataclasses
import logging
import shutil

import numpy as np
import pytest
from random_checkpoint import single_thread

import nmt.data.prepare
import nmt.training.loop
import nmt.training.trainer
from nmt.checkpoints.file import load_checkpoint
from nmt.config.loader import load_config
from nmt.data.subword import (
    WORD_START,
    Subwords,
    merge_attention,
    merge_pieces,
    source_word_of_pieces,
    to_words,
    train_model,
    word_groups,
)
from nmt.data.tokenize import EnglishTokenizer
from nmt.data.vocab import UNK
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.data.prepare import prepare

from helpers import REPO, as_family


def with_data(config, **changes):
    return dataclasses.replace(config, data=dataclasses.replace(config.data, **changes))


@pytest.fixture
def bpe_config(smoke_config):
    """The smoke config with BPE of 60 pieces a side: the tiny corpus fills that."""
    return with_data(smoke_config, subword="bpe", src_subword_vocab=60, tgt_subword_vocab=60)


def test_pieces_spell_the_training_words_and_text(smoke_config, bpe_config):
    words, pieces = prepare(smoke_config), prepare(bpe_config)
    assert pieces.dir != words.dir
    detokenizer = EnglishTokenizer()
    for split in ("train", "dev", "test"):
        for lang in ("zh", "en"):
            word_lines = read_lines(words.tokens(split, lang))
            piece_lines = read_lines(pieces.tokens(split, lang))
            assert len(piece_lines) == len(word_lines)
            for word_line, piece_line in zip(word_lines, piece_lines):
                assert merge_pieces(piece_line.split()) == word_line.split()
        # ... and back to the detokenized English (what BLEU scores) exactly as without pieces
        merged = [detokenizer.detokenize(merge_pieces(line.split()))
                  for line in read_lines(pieces.tokens(split, "en"))]
        assert merged == [detokenizer.detokenize(line.split())
                          for line in read_lines(words.tokens(split, "en"))]
    pieces_seen = {p for line in read_lines(pieces.tokens("train", "en")) for p in line.split()}
    assert any(not p.startswith(WORD_START) for p in pieces_seen), "some word was cut"
    manifest = pieces.manifest
    assert manifest["subword"]["vocab_size"] == {"requested": {"zh": 60, "en": 60},
                                                 "actual": {"zh": 60, "en": 60}}
    for lang in ("zh", "en"):
        lengths = manifest["subword"]["train_tokens_per_sentence"][lang]
        assert lengths["pieces"] > lengths["words"]
        assert pieces.subword_model(lang).is_file()
    assert manifest["dev_oov_rate"]["en"] <= prepare(smoke_config).manifest["dev_oov_rate"]["en"]
    assert "subword bpe zh 60 (asked 60)" in nmt.data.prepare.summary(manifest)


def test_encode_decode_round_trip_on_words_it_never_saw():
    lines = ["汤姆 喜欢 猫 。", "玛丽 想要 小狗 。", "Tom likes cats ."] * 20
    model, size = train_model(lines, "unigram", 20, 1.0, seed=1, key="data.src_subword_vocab")
    subwords = Subwords(model)
    assert len(subwords) == size
    for sentence in ["汤姆 喜欢 小狗 和 猫咪 。", "Zoë 's ▁odd 3,000 ok", "鱼"]:
        pieces = subwords.encode(sentence.split())
        assert all(" " not in p for p in pieces)
        assert merge_pieces(pieces) == sentence.replace(WORD_START, "_").split()
    assert subwords.encode([]) == []


def test_second_prepare_reuses_the_models_and_the_same_config_gives_the_same_folder(
        bpe_config, tmp_path, monkeypatch):
    first = prepare(bpe_config)
    models = {lang: first.subword_model(lang).read_bytes() for lang in ("zh", "en")}
    mtimes = {lang: first.subword_model(lang).stat().st_mtime_ns for lang in ("zh", "en")}

    def fail(*args):
        raise AssertionError("trained again")

    with monkeypatch.context() as patch:
        patch.setattr(nmt.data.prepare, "apply_subwords", fail)
        assert prepare(bpe_config).dir == first.dir
    assert {lang: first.subword_model(lang).stat().st_mtime_ns for lang in ("zh", "en")} == mtimes

    elsewhere = prepare(with_data(bpe_config, prepared_dir=str(tmp_path / "again")))
    for name in ("spm.zh.model", "spm.en.model", "train.tok.zh", "dev.tok.en", "vocab.zh"):
        assert (elsewhere.dir / name).read_bytes() == (first.dir / name).read_bytes(), name
    assert models["zh"] == elsewhere.subword_model("zh").read_bytes()

    first.subword_model("en").unlink()  # an incomplete folder is prepared again
    assert prepare(bpe_config).subword_model("en").is_file()


def test_a_vocabulary_too_large_for_the_corpus_is_capped_with_a_warning(smoke_config, caplog):
    config = with_data(smoke_config, subword="bpe", src_subword_vocab=8000, tgt_subword_vocab=8)
    with caplog.at_level(logging.WARNING, logger="nmt.data.subword"):
        manifest = prepare(config).manifest
    sizes = manifest["subword"]["vocab_size"]
    assert sizes["requested"] == {"zh": 8000, "en": 8}
    assert 8 < sizes["actual"]["zh"] < 8000 and sizes["actual"]["en"] > 8
    assert "data.src_subword_vocab = 8000 is more than this corpus allows" in caplog.text
    assert "data.tgt_subword_vocab = 8 is too small" in caplog.text


def test_word_groups_and_merge_with_unknowns_and_bare_marks():
    pieces = ["▁I", "▁'", "m", "▁read", "ing", UNK, "s", "▁", "鱼", "▁."]
    assert word_groups(pieces) == [[0], [1, 2], [3, 4], [5], [6], [7, 8], [9]]
    assert merge_pieces(pieces) == ["I", "'m", "reading", UNK, "s", "鱼", "."]
    assert merge_pieces(["▁a", "▁"]) == ["a"] and merge_pieces([]) == []
    assert source_word_of_pieces(["▁汤", "姆", "▁猫"]) == ["▁汤姆", "▁汤姆", "▁猫"]


def test_attention_merge_gives_word_level_rows_that_sum_to_one():
    rng = np.random.default_rng(0)
    tgt, src = ["▁Tom", "▁like", "s", "▁cat", "s", "▁."], ["▁汤", "姆", "▁喜欢", "▁猫", "▁。"]
    weights = rng.random((len(tgt) + 1, len(src)))  # + the </s> row
    weights /= weights.sum(axis=1, keepdims=True)
    words, src_words, merged = to_words(tgt, src, weights)
    assert words == ["Tom", "likes", "cats", "."] and src_words == ["汤姆", "喜欢", "猫", "。"]
    assert merged.shape == (len(words) + 1, len(src_words))
    np.testing.assert_allclose(merged.sum(axis=1), 1.0, rtol=1e-6)
    # "likes" = the mean of its two rows, over "汤姆" = the sum of its two columns
    np.testing.assert_allclose(merged[1, 0], weights[1:3, 0:2].sum(axis=1).mean(), rtol=1e-6)
    np.testing.assert_allclose(merged[-1], [weights[-1, :2].sum(), *weights[-1, 2:]], rtol=1e-6)
    assert merge_attention(weights[:0], [], src).shape == (0, len(src_words))
    assert to_words(tgt, src, None)[2] is None


@pytest.mark.e2e
@pytest.mark.parametrize("architecture", ["rnn", "transformer"])
def test_smoke_bpe_prepares_trains_evaluates_and_translates_in_whole_words(smoke_config,
                                                                          monkeypatch, architecture):
    """configs/smoke.yaml with only data.subword=bpe: the default 4,000 pieces a side are more
    than 200 pairs hold, and are capped, not a crash. The subword test that trains (~6 s of
    CPU per family): 20 steps, then evaluate and translate. The Transformer's several heads are
    merged into whole words too."""
    from nmt.decoding.plan import plan_for
    from nmt.evaluation.evaluate import evaluate
    from nmt.decoding.translator import Translator

    config = with_data(smoke_config, subword="bpe")
    config = dataclasses.replace(config, model=as_family(config.model, architecture))
    config = dataclasses.replace(config, training=dataclasses.replace(  # half the smoke steps
        config.training, max_steps=20, checkpoint_every=20))
    shown = []
    original = nmt.training.trainer.Board.examples
    monkeypatch.setattr(nmt.training.trainer.Board, "examples",
                        lambda self, *args: shown.append(args) or original(self, *args))
    with single_thread():
        prepared = prepare(config)
        run_dir = nmt.training.loop.train(config)
        results = evaluate(plan_for(config))
        search = dataclasses.replace(config.search, n_best=2, replace_unk=True)
        translator = Translator.from_checkpoint(run_dir / "checkpoints" / "best.pt", search,
                                                device="cpu", keep_attention=True)
        lines = ["汤姆喜欢猫。", "", "我们想要茶和咖啡。", "鱼"]
        translations = translator.translate(lines)
    assert [t.text == "" for t in translations] == [False, True, False, False]
    assert all(p.startswith(WORD_START) or p for p in translator.segment("汤姆喜欢猫咪。"))
    for translation in translations:
        seen = [translation.text, *translation.tokens, *translation.src_tokens,
                *(text for text, _ in translation.n_best)]
        assert not any(WORD_START in s or "@@" in s for s in seen), seen
        if translation.attention is not None:
            assert translation.attention.shape == (len(translation.attention_labels()),
                                                   len(translation.src_tokens))
            np.testing.assert_allclose(translation.attention.sum(axis=1), 1.0, rtol=1e-5)
        if architecture == "transformer" and translation.attention is not None:
            assert translation.heads.shape[1:] == translation.attention.shape
            np.testing.assert_allclose(translation.heads.mean(axis=0), translation.attention, atol=1e-4)
    assert translations[0].src_tokens == ["汤姆", "喜欢", "猫", "。"]
    # The models travel in the checkpoint: translating needs no prepared folder.
    saved = load_checkpoint(run_dir / "checkpoints" / "best.pt")["subword"]
    assert saved == {lang: prepared.subword_model(lang).read_bytes() for lang in ("zh", "en")}
    shutil.rmtree(prepared.dir)
    alone = Translator.from_checkpoint(run_dir / "checkpoints" / "best.pt", search, device="cpu")
    with single_thread():
        assert alone.translate(lines[:1])[0].text == translations[0].text
    # Alignment reads the same pieces as the model (not words it would see as <unk>), and
    # gives links between the gold units: characters and whole English tokens.
    from nmt.align.aligner import AttentionAligner
    from nmt.align.links import parse_pairs
    from nmt.data.vocab import UNK_ID

    aligner = AttentionAligner.from_checkpoint(run_dir / "checkpoints" / "best.pt", device="cpu")
    pair = parse_pairs(["汤姆喜欢猫。\tTom likes cats."])[0]
    src, tgt = aligner._tokens(pair)
    assert UNK_ID not in aligner.src_vocab.encode(src) + aligner.tgt_vocab.encode(tgt)
    links = aligner.align([pair])[0]
    assert links and all(i < len("汤姆喜欢猫。") and j < 4 for i, j in links)
    hypotheses = (run_dir / "hypotheses.test.en").read_text(encoding="utf-8")
    assert WORD_START not in hypotheses and results["sentences"] > 0
    assert shown, "validation showed examples"
    for step, sources, texts, references, tokens, attentions, heads in shown:
        for src, text, words, weights, grid in zip(sources, texts, tokens, attentions, heads):
            assert not any(WORD_START in s for s in [*src, text, *words])
            assert weights.shape[1] == len(src) and weights.shape[0] in (len(words), len(words) + 1)
            assert (grid is None) == (architecture == "rnn")  # one head: no grid
            assert grid is None or grid.shape[1:] == weights.shape


def test_translate_without_checkpoint_models_reads_the_prepared_folder(bpe_config, tmp_path):
    from random_checkpoint import write_random_checkpoint

    from nmt.decoding.translator import Translator

    path = write_random_checkpoint(tmp_path / "random.pt", bpe_config, ["▁汤姆", "▁猫"],
                                   ["▁Tom", "▁like", "s", "▁cat", "▁."])
    with pytest.raises(NMTError, match=r"spm\.zh\.model: subword model not found"):
        Translator.from_checkpoint(path, device="cpu")
    prepare(bpe_config)  # now the folder of its data settings has the models
    translator = Translator.from_checkpoint(path, device="cpu")
    assert load_checkpoint(path).get("subword") is None
    with single_thread():
        translation = translator.translate(["汤姆喜欢猫。"])[0]
    assert WORD_START not in translation.text and translation.src_tokens[0] == "汤姆"


@pytest.mark.parametrize("override, message", [
    ("data.src_subword_vocab=0", r"data\.src_subword_vocab = 0 is not allowed; use an integer >= 8"),
    ("data.tgt_subword_vocab=big", r"data\.tgt_subword_vocab = 'big' must be int"),
    ("data.tgt_subword_vocab=4000.5", r"data\.tgt_subword_vocab = 4000\.5 must be int"),
    ("data.subword=wordpiece", r"data\.subword = 'wordpiece' is not allowed; choose one of "
                               r"\['none', 'bpe', 'unigram'\]"),
])
def test_bad_subword_settings_name_the_key(override, message):
    with pytest.raises(NMTError, match=message):
        load_config(REPO / "configs" / "smoke.yaml", ["data.subword=bpe", override])


def test_subword_sizes_change_the_data_hash_only_when_subwords_are_on():
    def hash_of(*overrides):
        return load_config(REPO / "configs" / "bahdanau.yaml", list(overrides)).data_hash()  # words

    assert hash_of() == hash_of("data.src_subword_vocab=2000") == hash_of("data.subword=none")
    assert hash_of("data.subword=bpe") != hash_of("data.subword=bpe", "data.src_subword_vocab=2000")
    assert hash_of("data.subword=bpe") != hash_of("data.subword=unigram") != hash_of()


def test_characters_stay_whole_pieces_with_zh_level_char(bpe_config):
    """Pieces never span two tokens: on characters, only Latin runs (`Tom`) can be cut."""
    prepared = prepare(with_data(bpe_config, zh_level="char"))
    for line in read_lines(prepared.tokens("train", "zh")):
        assert all(len(t) == 1 or t.isascii() for t in merge_pieces(line.split()))
        assert all(len(p.lstrip(WORD_START)) <= 1 or p.lstrip(WORD_START).isascii()
                   for p in line.split())
