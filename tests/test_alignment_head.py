"""The alignment head: a distribution over the source for every target word, trained by the
guided loss alone (the translation never moves), learning links it is shown, and what the
alignment tool reads."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from random_checkpoint import single_thread

from nmt.align.forced import forced_attention
from nmt.align.guided import GuidedAlignment
from nmt.config import load_config
from nmt.data.batching import Example, collate
from nmt.errors import NMTError
from nmt.loss import summed_loss
from nmt.model import build_model

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = [Example([4, 5, 6, 7], [8, 9, 10]), Example([5, 6, 7], [9, 11])]
LINKS = [{(3, 0), (2, 1), (0, 2)}, {(2, 0), (0, 1)}]  # crossing: far from where it starts


def headed_model(smoke_config, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(replace(smoke_config.model, alignment_head=True, dropout=0.0), 12, 12)


def test_one_distribution_per_target_word_and_none_on_padding(smoke_config):
    model = headed_model(smoke_config).eval()
    batch = collate(EXAMPLES, [0, 1])
    logits, weights, head = model(batch.src, batch.src_lengths, batch.tgt_in, alignment=True)
    assert head.shape == weights.shape == (2, 4, 4)
    assert torch.allclose(head.sum(-1), torch.ones(2, 4))
    assert head[1, :, 3].abs().max() == 0  # the second source has 3 tokens: column 3 is padding
    plain_logits, plain_weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    assert torch.equal(logits, plain_logits) and torch.equal(weights, plain_weights)


def test_only_the_head_learns_from_its_loss(smoke_config):
    """The head reads the model's states detached: its loss moves no translation weight."""
    model = headed_model(smoke_config)
    batch = collate(EXAMPLES, [0, 1])
    _, _, head = model(batch.src, batch.src_lengths, batch.tgt_in, alignment=True)
    target = GuidedAlignment(1.0, LINKS).targets(batch)
    (-(target * head.clamp(min=1e-9).log()).sum()).backward()
    moved = {name for name, p in model.named_parameters() if p.grad is not None and p.grad.any()}
    assert moved == {"alignment_head.query_layer.weight", "alignment_head.query_layer.bias",
                     "alignment_head.key_layer.weight"}


def test_the_head_learns_the_links_and_the_aligner_reads_it(smoke_config):
    model = headed_model(smoke_config)
    batch = collate(EXAMPLES, [0, 1])
    guide = GuidedAlignment(1.0, LINKS)

    def argmax_links(weights) -> list[set]:
        return [{(int(w[t].argmax()), t) for t in range(len(ex.tgt))}
                for w, ex in zip(weights, EXAMPLES)]

    optimizer = torch.optim.Adam(model.alignment_head.parameters(), lr=0.02)
    with single_thread():
        for _ in range(60):
            optimizer.zero_grad()
            summed_loss(model, batch, 0.0, guide).backward()
            optimizer.step()
    src, tgt = [ex.src for ex in EXAMPLES], [ex.tgt for ex in EXAMPLES]
    assert argmax_links(forced_attention(model, src, tgt)) == LINKS  # the head, by default
    attention = forced_attention(model, src, tgt, layer=0)  # the translation attention
    head = forced_attention(model, src, tgt)
    assert not all(a.shape == h.shape and (abs(a - h) < 1e-6).all() for a, h in zip(attention, head))


def test_the_head_needs_guided_alignment_and_a_recurrent_model():
    smoke = REPO / "configs" / "smoke.yaml"
    assert load_config(smoke, ["model.alignment_head=true", "training.guided_alignment=0.5"])
    with pytest.raises(NMTError, match="model.alignment_head.*guided_alignment"):
        load_config(smoke, ["model.alignment_head=true"])
    with pytest.raises(NMTError, match="model.alignment_head.*architecture"):
        load_config(smoke, ["model.alignment_head=true", "training.guided_alignment=0.5",
                            "model.architecture=transformer"])
