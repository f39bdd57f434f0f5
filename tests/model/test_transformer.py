"""The Transformer: masking, padding, incremental decoding, search, learning, checkpoints, config."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from nmt.checkpoints.file import load_checkpoint
from nmt.config.schema import ModelConfig, RNNConfig, SearchConfig, TransformerConfig
from nmt.config.loader import build_config, load_config
from nmt.data.batching import Example, collate
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK_ID
from nmt.errors import NMTError
from nmt.model import build_model, has_alignment
from nmt.decoding.plan import plan_for
from nmt.evaluation.evaluate import evaluate
from nmt.decoding.search import beam_search, greedy_search, replace_unknowns
from nmt.decoding.streaming import translate_stream
from nmt.training.loop import train
from nmt.decoding.translator import Translator
from helpers import REPO
from random_checkpoint import GrowingEos, single_thread, write_random_checkpoint

TINY = dict(encoder_layers=2, decoder_layers=2, d_model=16, heads=2, ff_size=32,
            attention_dropout=0.1, activation_dropout=0.1)


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def tiny_config(dropout: float = 0.1, tie_embeddings: bool = False, **changes) -> ModelConfig:
    """TINY with `changes` (model.transformer keys) laid over it."""
    return ModelConfig(architecture="transformer", dropout=dropout, tie_embeddings=tie_embeddings,
                       transformer=TransformerConfig(**{**TINY, **changes}))


def tiny(**changes) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(tiny_config(**changes), 20, 15).eval()


def _batch():
    examples = [Example([5, 6, 7, 8], [4, 5, 6]), Example([9, 10], [7, 8, 9, 10, 11]),
                Example([11], [12])]
    return collate(examples, [0, 1, 2])


def test_a_future_target_token_changes_no_earlier_output():
    model, batch = tiny(), _batch()
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    changed = batch.tgt_in.clone()
    changed[:, 3] = 13
    logits2, weights2 = model(batch.src, batch.src_lengths, changed)
    torch.testing.assert_close(logits2[:, :3], logits[:, :3], rtol=0, atol=0)
    torch.testing.assert_close(weights2[:, :3], weights[:, :3], rtol=0, atol=0)
    assert not torch.allclose(logits2[:, 3:], logits[:, 3:])


def test_padding_is_never_attended_and_changes_nothing():
    model, batch = tiny(), _batch()
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    padding = (batch.src == PAD_ID)[:, None, :].expand_as(weights)  # (B, T, S)
    assert padding.any() and torch.all(weights[padding] == 0)
    heads = model.attention_heads(batch.src, batch.src_lengths, batch.tgt_in)  # (B, L, h, T, S)
    assert heads.shape == (3, 2, 2, batch.tgt_in.size(1), batch.src.size(1))
    assert torch.all(heads.masked_select((batch.src == PAD_ID)[:, None, None, None, :]) == 0)
    torch.testing.assert_close(heads[:, -1].mean(dim=1), weights)
    # The short sentence alone (no padding) and with three more padding columns: same output.
    for i in range(3):
        n = int(batch.src_lengths[i])
        alone, alone_weights = model(batch.src[i:i + 1, :n], batch.src_lengths[i:i + 1],
                                     batch.tgt_in[i:i + 1])
        torch.testing.assert_close(alone, logits[i:i + 1], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(alone_weights, weights[i:i + 1, :, :n], atol=1e-6, rtol=1e-5)
    wider = F.pad(batch.src, (0, 3), value=PAD_ID)
    torch.testing.assert_close(model(wider, batch.src_lengths, batch.tgt_in)[0], logits,
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("changes", [{}, {"norm": "post"}, {"positions": "learned"},
                                     {"alignment_layer": 0, "tie_embeddings": True}])
def test_incremental_decoding_equals_teacher_forcing_at_every_position(changes):
    model, batch = tiny(**changes), _batch()
    logits, weights = model(batch.src, batch.src_lengths, batch.tgt_in)
    memory = model.encode(batch.src, batch.src_lengths)
    state = model.init_state(memory)
    for t in range(batch.tgt_in.size(1)):
        log_probs, state, step_weights = model.decode_step(batch.tgt_in[:, t], state, memory)
        assert state.keys[0].shape[2] == t + 1  # the cache grows by one position a step
        torch.testing.assert_close(log_probs, F.log_softmax(logits[:, t], -1), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(step_weights, weights[:, t], atol=1e-6, rtol=1e-5)


def _sharp_model(**changes):
    model = tiny(dropout=0.0, **changes)
    with torch.no_grad():
        model.output_layer.weight.mul_(6.0)  # sharper distributions: the input matters
    return model


def _random_sources(seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 1, 4, 12, 3, 9])
    src = torch.randint(4, 20, (len(lengths), int(lengths.max())), generator=generator)
    src[torch.arange(src.size(1)) >= lengths.unsqueeze(1)] = PAD_ID
    return src, lengths


def test_beam_size_1_is_exactly_greedy():
    model = GrowingEos(_sharp_model())
    src, lengths = _random_sources()
    greedy = greedy_search(model, src, lengths, alpha=1.0, max_length_ratio=2.0)
    beam = beam_search(model, src, lengths, config=SearchConfig(beam_size=1, length_penalty=1.0))
    assert len({len(g[0].tokens) for g in greedy}) > 2  # varied lengths
    for g, b in zip(greedy, beam):
        assert g[0].tokens == b[0].tokens and g[0].ended == b[0].ended
        assert g[0].score == pytest.approx(b[0].score, abs=1e-5)
        torch.testing.assert_close(torch.from_numpy(g[0].attention), torch.from_numpy(b[0].attention))


def test_n_best_scores_are_the_model_scores_and_unknowns_are_replaced():
    """Teacher forcing re-scores each n-best hypothesis: equal log-probabilities show that beam
    search reorders the cached keys and values consistently with tokens and scores."""
    model = _sharp_model()
    with torch.no_grad():
        model.output_layer.bias[UNK_ID] += 2.0  # <unk> in many outputs
    src, lengths = _random_sources(seed=3)
    found = beam_search(model, src, lengths,
                        config=SearchConfig(beam_size=4, n_best=3, length_penalty=0.0))
    unknowns = 0
    for i, hyps in enumerate(found):
        assert len(hyps) == 3 and len({tuple(h.tokens) for h in hyps}) == 3
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        n = int(lengths[i])
        src_tokens = [f"w{j}" for j in range(n)]
        for hyp in hyps:
            target = [BOS_ID, *hyp.tokens] + ([EOS_ID] if hyp.ended else [])
            with torch.no_grad():
                logits, _ = model(src[i:i + 1, :n], lengths[i:i + 1],
                                  torch.tensor([target[:-1]]))
            expected = logits.log_softmax(-1)[0].gather(1, torch.tensor(target[1:])[:, None]).sum()
            assert hyp.log_prob == pytest.approx(float(expected), abs=1e-3)
            assert hyp.attention.shape == (len(target) - 1, n)
            replaced = replace_unknowns(["x"] * len(hyp.tokens), hyp.tokens, hyp.attention,
                                        src_tokens)
            for t, token in enumerate(hyp.tokens):
                if token == UNK_ID:
                    unknowns += 1
                    assert replaced[t] == src_tokens[int(hyp.attention[t].argmax())]
    assert unknowns > 0


def test_a_tiny_transformer_overfits_a_handful_of_pairs():
    torch.manual_seed(0)
    examples = [Example([5, 6, 7], [4, 5, 6]), Example([8, 9], [7, 8]),
                Example([10, 11, 12, 13], [9, 10, 11, 12]), Example([6, 5], [13, 4])]
    batch = collate(examples, [0, 1, 2, 3])
    model = build_model(tiny_config(encoder_layers=1, decoder_layers=1, dropout=0.0,
                                    attention_dropout=0.0, activation_dropout=0.0,
                                    tie_embeddings=True), 16, 16)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(60):
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05
    found = greedy_search(model.eval(), batch.src, batch.src_lengths)
    assert [h[0].tokens for h in found] == [ex.tgt for ex in examples]


def test_the_rnn_offers_its_attention_in_the_same_shape():
    torch.manual_seed(0)
    rnn = build_model(ModelConfig(rnn=RNNConfig(embed_size=8, encoder_hidden=8, decoder_hidden=16,
                                                attention_size=8, readout_size=8)), 20, 15).eval()
    batch = _batch()
    _, weights = rnn(batch.src, batch.src_lengths, batch.tgt_in)
    heads = rnn.attention_heads(batch.src, batch.src_lengths, batch.tgt_in)
    torch.testing.assert_close(heads[:, 0, 0], weights)


def _transformer_smoke(smoke_config, **training):
    config = replace(smoke_config, model=load_config(REPO / "configs" / "smoke_transformer.yaml").model)
    return replace(config, training=replace(config.training, **training))


@pytest.mark.e2e
def test_transformer_training_resumes_exactly_and_translates(smoke_config, tmp_path):
    # Validation only where each run ends: enough for the TensorBoard pictures.
    config = _transformer_smoke(smoke_config, max_steps=12, validate_every=100, checkpoint_every=6,
                                examples=1)
    uninterrupted = load_checkpoint(train(config) / "checkpoints" / "last.pt")
    resumed_config = replace(config, runs_dir=str(tmp_path / "resumed"))
    train(replace(resumed_config, training=replace(config.training, max_steps=6)))
    run_dir = train(resumed_config)
    path = run_dir / "checkpoints" / "last.pt"
    resumed = torch.load(path, map_location="cpu", weights_only=True)
    assert resumed["progress"]["step"] == 12
    assert resumed["config"]["model"]["architecture"] == "transformer"
    summary = json.loads((run_dir / "train_summary.json").read_text())
    assert (summary["architecture"], summary["attention"]) == ("transformer", "2-head")
    assert uninterrupted["model"].keys() == resumed["model"].keys()
    for name, tensor in uninterrupted["model"].items():
        torch.testing.assert_close(resumed["model"][name], tensor, rtol=0, atol=0, msg=name)

    search = replace(config.search, beam_size=3, n_best=2, replace_unk=True)
    translator = Translator.from_checkpoint(path, search=search, keep_attention=True,
                                            architecture="transformer")
    translation = translator.translate(["汤姆喜欢猫。"])[0]
    assert translation.text and len(translation.n_best) == 2
    assert translation.attention.shape == (len(translation.attention_labels()),
                                           len(translation.src_tokens))
    # every head of the alignment layer: the smoke Transformer has 2; they average to the alignment
    assert translation.heads.shape == (2, *translation.attention.shape)
    np.testing.assert_allclose(translation.heads.mean(axis=0), translation.attention, atol=1e-5)
    translate_stream(translator, ["汤姆喜欢猫。"], io.StringIO(), 8, tmp_path / "plots")
    assert {p.name for p in (tmp_path / "plots").iterdir()} == {"0001.json", "0001.png",
                                                                 "0001.heads.png"}
    events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"images": 0}).Reload()
    images = events.Tags()["images"]
    assert any(t.startswith("attention/") for t in images)
    assert any(t.startswith("attention_heads/") for t in images)


def test_a_checkpoint_of_the_other_family_is_a_clear_error(smoke_config, tmp_path):
    transformer = _transformer_smoke(smoke_config)
    path = write_random_checkpoint(tmp_path / "transformer.pt", transformer)
    with pytest.raises(NMTError, match="architecture = transformer.*architecture = rnn"):
        Translator.from_checkpoint(path, architecture="rnn")
    rnn_path = write_random_checkpoint(tmp_path / "rnn.pt", smoke_config)
    with pytest.raises(NMTError, match="architecture = rnn.*architecture = transformer"):
        Translator.from_checkpoint(rnn_path, architecture="transformer")
    assert Translator.from_checkpoint(path, architecture="transformer").model.heads == 2
    with pytest.raises(NMTError, match="architecture = transformer.*architecture = rnn"):
        evaluate(plan_for(smoke_config, checkpoints=path))  # evaluate --checkpoint with the other family's config


@pytest.mark.parametrize("model,message", [
    ({"d_model": 30, "heads": 4}, "multiple of model.transformer.heads"),
    ({"d_model": 9, "heads": 3}, "must be even"),
    ({"decoder_layers": 2, "alignment_layer": 2}, "alignment_layer = 2 names no layer"),
    ({"norm": "middle"}, "model.transformer.norm"),
    ({"positions": "rotary"}, "model.transformer.positions"),
    ({"attention_dropout": 1.5}, "model.transformer.attention_dropout"),
])
def test_transformer_keys_are_checked(model, message):
    with pytest.raises(NMTError, match=message):
        build_config({"model": {"architecture": "transformer", "transformer": model}})


def test_keys_of_the_other_family_are_errors():
    # dot attention with mismatched RNN sizes is an error for the RNN; for a Transformer, any
    # model.rnn key is (tests/test_config_families.py)
    rnn_only = {"attention": "dot", "decoder_hidden": 100}
    with pytest.raises(NMTError, match="must equal"):
        build_config({"model": {"rnn": rnn_only}})
    with pytest.raises(NMTError, match="belongs to the rnn family"):
        build_config({"model": {"architecture": "transformer", "rnn": rnn_only}})
    config = build_config({"model": {"architecture": "transformer", "tie_embeddings": True}})
    assert has_alignment(config.model)
    with pytest.raises(NMTError, match="adam_betas"):
        build_config({"training": {"adam_betas": [0.9, 1.5]}})
