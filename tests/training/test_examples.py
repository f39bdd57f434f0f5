"""TensorBoard's dev examples: typical, distinct, fixed; gold links drawn where a pair has them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
from random_checkpoint import single_thread
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from nmt.align.links import parse_pairs
from nmt.config.schema import ModelConfig
from nmt.training.board import Board
from nmt.data.batching import load_examples
from nmt.data.vocab import Vocab
from nmt.training.examples import DevExamples, match_gold, pick_examples, token_links
from nmt.io import read_lines
from nmt.model import build_model
from nmt.plot import attention_figure, figure_to_array
from nmt.data.prepare import prepare
from nmt.training.validate import DevSet


def test_typical_distinct_sentences_come_first():
    short, typical = ["走开", "！"], list("汤姆喜欢猫咪。")
    other = list("玛丽需要咖啡吗？")
    sources = [short, short, typical, typical, other, list("我" * 30)]
    assert pick_examples(sources, 2) == [2, 4]
    assert pick_examples(sources, 3, first=[5]) == [5, 2, 4]
    assert pick_examples(sources, 5) == [2, 4, 0, 5]  # too few typical ones: the rest, distinct
    assert pick_examples(sources, 0) == []


def test_gold_pairs_are_matched_and_projected_onto_model_tokens():
    [pair] = parse_pairs(["g\t汤 姆 喜 欢 猫 ？\tDoes Tom like cats ?\t0-1 1-1 2-2 3-2 4-3 5-4\t2-0"])
    dev_zh = ["玛丽喜欢狗。", "汤姆喜欢猫?"]  # normalization makes ? full width on both sides
    dev_en = [["Mary", "likes", "dogs", "."], ["does", "Tom", "like", "cats", "?"]]
    assert list(match_gold([pair], dev_zh, dev_en)) == [1]
    src, tgt = ["汤姆", "喜欢", "猫", "？"], ["does", "Tom", "like", "cats", "?"]
    assert token_links(pair, pair.sure, src, tgt) == {(1, 0), (2, 1), (3, 2), (4, 3)}
    assert token_links(pair, pair.possible, src, tgt) - token_links(pair, pair.sure, src, tgt) == {(0, 1)}


def test_heatmap_marks_gold_cells():
    weights = np.full((2, 3), 0.2, dtype=np.float32)
    plain = figure_to_array(attention_figure(weights, ["汤姆", "喜欢", "猫"], ["Tom", "likes"]))
    marked = figure_to_array(attention_figure(weights, ["汤姆", "喜欢", "猫"], ["Tom", "likes"],
                                              gold={(0, 0)}, possible={(1, 1)}))
    assert plain.shape == marked.shape
    red = (marked[..., 0] > 200) & (marked[..., 1] < 60) & (marked[..., 2] < 60)
    assert red.sum() > 50 and not ((plain[..., 0] > 200) & (plain[..., 1] < 60)).any()


def dev_with_gold(config, tmp_path, possible: str):
    """The prepared tiny dev set, its vocabularies, and a made-up gold line for dev pair 5 (Sure
    link 0-0, Possible links `possible`) in tmp_path/gold.tsv."""
    prepared = prepare(config)
    zh, en = read_lines(prepared.text("dev", "zh")), read_lines(prepared.tokens("dev", "en"))
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    src_tokens = [line.split() for line in read_lines(prepared.tokens("dev", "zh"))]
    dev = DevSet(load_examples(prepared.tokens("dev", "zh"), prepared.tokens("dev", "en"),
                               src_vocab, tgt_vocab), src_tokens, read_lines(prepared.text("dev", "en")))
    units = " ".join(zh[5].replace(" ", ""))
    gold = tmp_path / "gold.tsv"
    gold.write_text(f"x\t{units}\t{en[5]}\t0-0\t{possible}\n", encoding="utf-8")
    return dev, zh, [line.split() for line in en], src_vocab, tgt_vocab, gold


def test_the_gold_pair_of_the_dev_set_gets_a_marked_heatmap(smoke_config, tmp_path):
    dev, zh, en_tokens, src_vocab, tgt_vocab, gold = dev_with_gold(smoke_config, tmp_path, "0-0 1-0")
    src_tokens = dev.src_tokens
    shown = DevExamples.choose(src_tokens, zh, en_tokens, 3, str(gold))
    assert shown.indices[0] == 5 and list(shown.gold) == [5] and len(set(shown.indices)) == 3
    assert DevExamples.choose(src_tokens, zh, en_tokens, 3, str(gold)).indices == shown.indices
    missing = DevExamples.choose(src_tokens, zh, en_tokens, 3, str(tmp_path / "none.tsv"))
    assert missing.gold == {}

    torch.manual_seed(0)
    model = build_model(smoke_config.model, len(src_vocab), len(tgt_vocab))
    board = Board(tmp_path / "tensorboard")
    with single_thread():
        shown.log_gold(board, model, dev, 10, "cpu")
    board.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0}).Reload()
    assert sorted(events.Tags()["images"]) == ["attention_gold/0", "posterior_gold/0"]


def test_a_transformers_gold_pair_gets_its_attention_heatmap_only(smoke_config, tmp_path):
    """A Transformer offers no posterior alignment (nmt.model.has_posterior, not hasattr: every
    model has the method): its cross-attention only."""
    dev, zh, en_tokens, src_vocab, tgt_vocab, gold = dev_with_gold(smoke_config, tmp_path, "0-0")
    shown = DevExamples.choose(dev.src_tokens, zh, en_tokens, 2, str(gold))
    torch.manual_seed(0)
    config = replace(ModelConfig(architecture="transformer"), dropout=0.0)
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    board = Board(tmp_path / "tensorboard")
    with single_thread():
        shown.log_gold(board, model, dev, 10, "cpu")
    board.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0}).Reload()
    assert sorted(events.Tags()["images"]) == ["attention_gold/0"]
