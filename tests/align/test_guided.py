"""Guided alignment: the auxiliary loss by hand, its gradient pulls attention to the links, the
links kept once in the prepared folder (read by every process, mapped through the training
pairs' index and target order), and a smoke run trains with eflomal's links of its pairs."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from random_checkpoint import single_thread

import nmt.align.guided
from helpers import REPO, as_family
from nmt.align.guided import LINKS, OFFSETS, GuidedAlignment, for_training, load_or_align
from nmt.config.loader import load_config
from nmt.data.batching import Example, collate
from nmt.data.token_arrays import PairArrays, TokenArrays, write_token_arrays
from nmt.data.vocab import SPECIALS, Vocab
from nmt.errors import NMTError
from nmt.model import build_model
from nmt.training.distributed import Distributed
from nmt.training.loop import train
from nmt.training.loss import summed_loss


def test_the_loss_by_hand():
    examples = [Example([4, 5, 6], [7, 8]), Example([4, 5], [9])]
    batch = collate(examples, [0, 1])  # tgt_in (2, 3): <s> y1 y2; src (2, 3)
    # (5, 0) and (0, 4) lie outside the padded batch (S = 3, T = 3): ignored
    guide = GuidedAlignment.from_links(0.5, [{(0, 0), (2, 0), (1, 1), (0, 4)}, {(1, 0), (5, 0)}])
    target = guide.targets(batch)
    assert target.shape == (2, 3, 3)
    assert target[0, 0].tolist() == [0.5, 0.0, 0.5] and target[0, 1].tolist() == [0.0, 1.0, 0.0]
    assert target[0, 2].sum() == 0 and target[1, 0].tolist() == [0.0, 1.0, 0.0]
    weights = torch.full((2, 3, 3), 0.25)
    weights[0, 0] = torch.tensor([0.5, 0.3, 0.2])
    expected = 0.5 * -(0.5 * math.log(0.5) + 0.5 * math.log(0.2) + math.log(0.25) + math.log(0.25))
    assert guide.loss(batch, weights).item() == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="attention weights"):
        guide.loss(batch, None)


@pytest.mark.parametrize("architecture", ["rnn", "transformer"])
def test_the_gradient_pulls_attention_to_the_links(smoke_config, architecture):
    """For a Transformer the loss trains its alignment layer's cross-attention, heads averaged."""
    torch.manual_seed(0)
    no_dropout = ({"attention_dropout": 0.0, "activation_dropout": 0.0}
                  if architecture == "transformer" else {})
    model = build_model(as_family(smoke_config.model, architecture, dropout=0.0, **no_dropout), 12, 12)
    examples = [Example([4, 5, 6, 7], [8, 9, 10]), Example([5, 6, 7], [9, 11])]
    batch = collate(examples, [0, 1])
    links = [{(3, 0), (2, 1), (0, 2)}, {(2, 0), (0, 1)}]  # crossing: far from the first weights
    guide = GuidedAlignment.from_links(1.0, links)

    def mass() -> float:
        _, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
        return float((guide.targets(batch) * weights.detach()).sum() / 5)

    before = mass()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    with single_thread():
        for _ in range(30):
            optimizer.zero_grad()
            (summed_loss(model, batch, 0.0, guide) - summed_loss(model, batch, 0.0)).backward()
            optimizer.step()
    assert before < 0.4 and mass() > 0.8


SRC = ["4 5 6", "4", "5 6 7 8 9", "6 7", ""]  # pair 2 is too long for max_length 3, pair 4 empty
TGT = ["7 8", "9 9 9", "7", "8 9 7", "7"]


def _prepared_pairs(folder, max_length=3, target_order="left_to_right") -> PairArrays:
    vocab = Vocab(SPECIALS + [str(i) for i in range(4, 10)])
    for lang, lines in (("zh", SRC), ("en", TGT)):
        (folder / f"train.tok.{lang}").write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        write_token_arrays(folder / f"train.tok.{lang}", vocab, folder / f"train.{lang}")
    return PairArrays(TokenArrays.open(folder / "train.zh"), TokenArrays.open(folder / "train.en"),
                      max_length, target_order)


def _fake_eflomal(calls: list, pause: float = 0.0):
    """Links (s, t) for s + t even: not symmetric in t, so a target order that is not applied
    shows; every call is recorded."""
    def align(examples):
        calls.append(len(examples))
        time.sleep(pause)
        return [{(s, t) for s in range(len(ex.src)) for t in range(len(ex.tgt)) if (s + t) % 2 == 0
                 and s <= t} for ex in examples]
    return align


def test_the_links_are_kept_once_in_the_prepared_folder_for_every_pair(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(nmt.align.guided, "eflomal_training_links", _fake_eflomal(calls))
    pairs = _prepared_pairs(tmp_path)
    assert pairs.index.tolist() == [0, 1, 3]
    guide = for_training(0.5, pairs, tmp_path / "runs", Distributed())
    assert calls == [4], "all nonempty prepared pairs, before the max_length filter"
    links, offsets = np.load(tmp_path / LINKS), np.load(tmp_path / OFFSETS)
    assert links.dtype == np.int16 and links.shape[1] == 2 and offsets.tolist()[-1] == len(links)
    assert len(offsets) == len(SRC) + 1 and offsets[4] == offsets[5]  # the empty pair: no links
    assert not (tmp_path / "runs" / "guided_links.txt").exists()

    for_training(0.5, _prepared_pairs(tmp_path, max_length=None), tmp_path / "runs", Distributed())
    assert calls == [4], "a second run (or member) reads the kept links"

    batch = collate(pairs, [2, 0])  # dataset positions: prepared pairs 3 and 0
    by_hand = GuidedAlignment.from_links(0.5, _fake_eflomal([])([pairs[2], pairs[0]]))
    assert torch.equal(guide.targets(batch), by_hand.targets(collate([pairs[2], pairs[0]], [0, 1])))
    assert guide.targets(batch)[0, 0].tolist() == [1.0, 0.0, 0.0]  # pair 3: t 0 ← s 0 only


def test_a_right_to_left_model_is_guided_in_its_own_target_order(tmp_path, monkeypatch):
    monkeypatch.setattr(nmt.align.guided, "eflomal_training_links", _fake_eflomal([]))
    forward = _prepared_pairs(tmp_path)
    backward = _prepared_pairs(tmp_path, target_order="right_to_left")
    ahead = for_training(1.0, forward, tmp_path, Distributed())
    behind = for_training(1.0, backward, tmp_path, Distributed())
    for indices in ([0, 1, 2], [2, 1]):
        lengths = [len(forward[i].tgt) for i in indices]
        reading, model = ahead.targets(collate(forward, indices)), behind.targets(collate(backward, indices))
        for row, n in enumerate(lengths):  # model position t is reading position n - 1 - t
            assert torch.equal(model[row, :n], reading[row, :n].flip(0))
        assert reading.sum() > 0


def test_processes_that_start_at_once_align_once(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(nmt.align.guided, "eflomal_training_links", _fake_eflomal(calls, pause=0.3))
    pairs = _prepared_pairs(tmp_path)
    results = []
    threads = [threading.Thread(target=lambda: results.append(load_or_align(tmp_path, pairs.src, pairs.tgt)))
               for _ in range(3)]  # flock excludes open files, so threads stand in for processes
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [4] and len(results) == 3
    assert all(np.array_equal(links, results[0][0]) for links, _ in results)
    assert not list(tmp_path.glob(".*.tmp"))


def test_damaged_kept_links_are_aligned_again(tmp_path, monkeypatch, caplog):
    calls = []
    monkeypatch.setattr(nmt.align.guided, "eflomal_training_links", _fake_eflomal(calls))
    pairs = _prepared_pairs(tmp_path)
    load_or_align(tmp_path, pairs.src, pairs.tgt)
    np.save(tmp_path / OFFSETS, np.zeros(3, dtype=np.int64))  # links of 2 pairs: not these 5
    links, offsets = load_or_align(tmp_path, pairs.src, pairs.tgt)
    assert calls == [4, 4] and len(offsets) == 6 and "aligning again" in caplog.text


@pytest.mark.e2e
def test_a_smoke_run_trains_with_eflomal_links(smoke_config):
    pytest.importorskip("eflomal", reason="eflomal is installed by `make setup`")
    config = replace(smoke_config, training=replace(smoke_config.training, guided_alignment=0.5,
                                                    max_steps=10, validate_every=10))
    with single_thread():
        run_dir = train(config)
    prepared = next(p.parent for p in Path(config.data.prepared_dir).rglob(LINKS))
    pairs = len(TokenArrays.open(prepared / "train.zh"))
    links, offsets = np.load(prepared / LINKS), np.load(prepared / OFFSETS)
    assert pairs > 50 and len(offsets) == pairs + 1 and offsets[-1] == len(links)
    assert (np.diff(offsets) > 0).mean() > 0.9  # nearly every pair has links
    assert not (run_dir / "guided_links.txt").exists()


def test_no_attention_cannot_be_guided():
    with pytest.raises(NMTError, match="training.guided_alignment"):
        load_config(REPO / "configs" / "smoke.yaml",
                    ["model.rnn.attention=none", "training.guided_alignment=0.05"])
    with pytest.raises(NMTError, match="training.guided_alignment"):
        load_config(REPO / "configs" / "smoke.yaml", ["training.guided_alignment=-1"])
