"""A Transformer's dev examples with gold links: its cross-attention only, as it offers no
posterior alignment (nmt.model.has_posterior, not hasattr: every model has the method)."""

from __future__ import annotations

from dataclasses import replace

import torch
from random_checkpoint import single_thread
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from nmt.config.schema import ModelConfig
from nmt.data.batching import load_examples
from nmt.data.prepare import prepare
from nmt.data.vocab import Vocab
from nmt.io import read_lines
from nmt.model import build_model
from nmt.training.board import Board
from nmt.training.examples import DevExamples
from nmt.training.validate import DevSet


def test_a_transformers_gold_pair_gets_its_attention_heatmap_only(smoke_config, tmp_path):
    prepared = prepare(smoke_config)
    zh, en = read_lines(prepared.text("dev", "zh")), read_lines(prepared.tokens("dev", "en"))
    src_vocab, tgt_vocab = Vocab.load(prepared.vocab("zh")), Vocab.load(prepared.vocab("en"))
    src_tokens = [line.split() for line in read_lines(prepared.tokens("dev", "zh"))]
    dev = DevSet(load_examples(prepared.tokens("dev", "zh"), prepared.tokens("dev", "en"),
                               src_vocab, tgt_vocab), src_tokens, read_lines(prepared.text("dev", "en")))
    gold = tmp_path / "gold.tsv"
    gold.write_text(f"x\t{' '.join(zh[5].replace(' ', ''))}\t{en[5]}\t0-0\t0-0\n", encoding="utf-8")
    shown = DevExamples.choose(src_tokens, zh, [line.split() for line in en], 2, str(gold))

    torch.manual_seed(0)
    config = replace(ModelConfig(architecture="transformer"), dropout=0.0)
    model = build_model(config, len(src_vocab), len(tgt_vocab))
    board = Board(tmp_path / "tensorboard")
    with single_thread():
        shown.log_gold(board, model, dev, 10, "cpu")
    board.close()
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"images": 0}).Reload()
    assert sorted(events.Tags()["images"]) == ["attention_gold/0"]
