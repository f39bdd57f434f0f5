"""Guided alignment: the auxiliary loss by hand, its gradient pulls attention to the links, and a
smoke run trains with eflomal's links of its training pairs."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from random_checkpoint import single_thread

from helpers import REPO
from nmt.align.guided import GuidedAlignment
from nmt.config.loader import load_config
from nmt.data.batching import Example, collate
from nmt.errors import NMTError
from nmt.io import read_lines
from nmt.model import build_model
from nmt.training.loop import train
from nmt.training.loss import summed_loss



def test_the_loss_by_hand():
    examples = [Example([4, 5, 6], [7, 8]), Example([4, 5], [9])]
    batch = collate(examples, [0, 1])  # tgt_in (2, 3): <s> y1 y2; src (2, 3)
    # (5, 0) and (0, 4) lie outside the padded batch (S = 3, T = 3): ignored
    guide = GuidedAlignment(0.5, [{(0, 0), (2, 0), (1, 1), (0, 4)}, {(1, 0), (5, 0)}])
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
    model = build_model(replace(smoke_config.model, architecture=architecture, dropout=0.0,
                                attention_dropout=0.0, activation_dropout=0.0), 12, 12)
    examples = [Example([4, 5, 6, 7], [8, 9, 10]), Example([5, 6, 7], [9, 11])]
    batch = collate(examples, [0, 1])
    links = [{(3, 0), (2, 1), (0, 2)}, {(2, 0), (0, 1)}]  # crossing: far from the first weights
    guide = GuidedAlignment(1.0, links)

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


@pytest.mark.e2e
def test_a_smoke_run_trains_with_eflomal_links(smoke_config):
    pytest.importorskip("eflomal", reason="eflomal is installed by `make setup`")
    config = replace(smoke_config, training=replace(smoke_config.training, guided_alignment=0.5,
                                                    max_steps=10, validate_every=10))
    with single_thread():
        run_dir = train(config)
    kept = read_lines(run_dir / "guided_links.txt")
    assert len(kept) > 50 and sum(bool(line) for line in kept) > 0.9 * len(kept)  # one a pair


def test_no_attention_cannot_be_guided():
    with pytest.raises(NMTError, match="training.guided_alignment"):
        load_config(REPO / "configs" / "smoke.yaml",
                    ["model.attention=none", "training.guided_alignment=0.05"])
    with pytest.raises(NMTError, match="training.guided_alignment"):
        load_config(REPO / "configs" / "smoke.yaml", ["training.guided_alignment=-1"])
