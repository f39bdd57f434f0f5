"""Word dropout: tokens of training batches become <unk> at rate p; validation never sees it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

import nmt.training.trainer
import nmt.training.validate
from nmt.data.batching import Example, collate
from nmt.checkpoints.file import load_checkpoint
from nmt.config.loader import build_config
from nmt.data.vocab import BOS_ID, PAD_ID, UNK_ID
from nmt.errors import NMTError
from nmt.training.loop import train
from nmt.training.word_dropout import drop_words, word_dropout


def test_tokens_are_dropped_at_the_rate_asked_and_never_padding_or_bos():
    torch.manual_seed(0)
    ids = torch.randint(4, 100, (200, 50))  # (B, S) no <unk> yet
    ids[:, 0] = BOS_ID
    ids[:, 40:] = PAD_ID
    dropped = drop_words(ids, 0.3)
    real = (ids != PAD_ID) & (ids != BOS_ID)
    rate = (dropped[real] == UNK_ID).float().mean().item()
    assert abs(rate - 0.3) < 0.02  # 7800 draws: the standard error is 0.005
    assert torch.equal(dropped[~real], ids[~real])
    assert torch.equal(dropped[real & (dropped != UNK_ID)], ids[real & (dropped != UNK_ID)])
    assert drop_words(ids, 0.0) is ids


def test_targets_are_never_dropped():
    torch.manual_seed(0)
    batch = collate([Example(list(range(4, 30)), list(range(4, 30)))] * 8, list(range(8)))
    dropped = word_dropout(batch, 0.5, 0.5)
    assert torch.equal(dropped.tgt_out, batch.tgt_out)
    assert (dropped.src == UNK_ID).any() and (dropped.tgt_in == UNK_ID).any()
    assert torch.equal(dropped.tgt_in[:, 0], batch.tgt_in[:, 0])  # <s> stays
    assert word_dropout(batch, 0.0, 0.0) is batch


def test_training_batches_are_dropped_and_validation_batches_are_not(smoke_config, monkeypatch):
    seen = {"train": [], "validate": []}

    def spy(where, original):
        def loss(model, batch, *args, **kwargs):
            seen[where].append(batch)
            return original(model, batch, *args, **kwargs)
        return loss

    monkeypatch.setattr(nmt.training.trainer, "summed_loss", spy("train", nmt.training.trainer.summed_loss))
    monkeypatch.setattr(nmt.training.validate, "summed_loss", spy("validate", nmt.training.validate.summed_loss))
    dev_sources = []
    original_validate = nmt.training.trainer.validate
    monkeypatch.setattr(nmt.training.trainer, "validate", lambda model, dev, *a: dev_sources.append(
        [ex.src for ex in dev.examples]) or original_validate(model, dev, *a))
    config = replace(smoke_config, training=replace(
        smoke_config.training, max_steps=4, validate_every=4, src_word_dropout=0.25))
    train(config)

    real = torch.cat([b.src[b.src != PAD_ID] for b in seen["train"]])
    assert len(seen["train"]) == 4 and abs((real == UNK_ID).float().mean().item() - 0.25) < 0.1
    assert all(not (b.tgt_in == UNK_ID).any() for b in seen["train"])  # tgt_word_dropout is 0
    # Validation scores the dev set as it is: its batches hold exactly its own ids.
    assert seen["validate"] and dev_sources
    validated = sorted(tuple(row[row != PAD_ID].tolist()) for b in seen["validate"] for row in b.src)
    assert validated == sorted(tuple(src) for src in dev_sources[0])


@pytest.mark.parametrize("key", ["src_word_dropout", "tgt_word_dropout"])
def test_bad_word_dropout_is_named(key):
    with pytest.raises(NMTError, match=f"training.{key} = 1.0 is not allowed; use a number in"):
        build_config({"training": {key: 1.0}}, source="x.yaml")
    assert getattr(build_config({"training": {key: 0.1}}).training, key) == 0.1


@pytest.mark.e2e
def test_a_resumed_run_drops_the_same_words(smoke_config, tmp_path):
    config = replace(smoke_config, training=replace(
        smoke_config.training, max_steps=4, validate_every=100, checkpoint_every=2,
        src_word_dropout=0.3, tgt_word_dropout=0.2))
    uninterrupted = load_checkpoint(train(config) / "checkpoints" / "last.pt")["model"]
    resumed_config = replace(config, runs_dir=str(tmp_path / "resumed"))
    train(replace(resumed_config, training=replace(resumed_config.training, max_steps=2)))
    resumed = load_checkpoint(train(resumed_config) / "checkpoints" / "last.pt")["model"]
    for name in uninterrupted:
        assert torch.equal(uninterrupted[name], resumed[name]), name
