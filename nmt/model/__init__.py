"""The two model families behind one interface, and the one place that tells them apart.

`build_model(config.model, ...)` returns a recurrent `Seq2Seq` or a `Transformer`, as
`model.architecture` says. Both are a `TranslationModel` (nmt/model/interface.py: encode /
init_state / decode_step / forward / attention_heads ..., the contract as code, which mypy holds
them and the Ensemble to): training, validation, search, translation and alignment call only
these, and never ask which family they have.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import nn

from nmt.config.migrate import model_in_sections
from nmt.config.schema import ModelConfig
from nmt.model.interface import TranslationModel
from nmt.model.seq2seq import build_seq2seq
from nmt.model.transformer import build_transformer

# The longest source a model is given. Training sentences have at most data.max_length (50)
# tokens; longer input is cut rather than decoded for minutes or run out of memory.
MAX_SOURCE_TOKENS = 200


def build_model(config: ModelConfig, src_vocab_size: int, tgt_vocab_size: int
                ) -> TranslationModel:
    """A freshly initialised model of the family `config.architecture` names."""
    if config.architecture == "transformer":
        return build_transformer(config, src_vocab_size, tgt_vocab_size)
    return build_seq2seq(config, src_vocab_size, tgt_vocab_size)


def has_alignment(config: ModelConfig) -> bool:
    """Whether the model returns attention weights (for plots and <unk> replacement): every
    Transformer does; a recurrent model unless `model.rnn.attention` is none."""
    return config.architecture == "transformer" or config.rnn.attention != "none"


def has_posterior(model: TranslationModel) -> bool:
    """Whether the model (every member of an Ensemble) offers a posterior alignment
    (Seq2Seq.posterior_attention): recurrent models do, Transformers do not."""
    return model.offers_posterior


def target_order(model: TranslationModel) -> str:
    """The order `model` writes its target in (model.target_order); an Ensemble's members
    share one (nmt/checkpoints/choose.py checks)."""
    return model.target_order


@contextmanager
def inference(model: nn.Module) -> Iterator[nn.Module]:
    """Eval mode (no dropout) and no autograd for a pass over `model`, which is put back into
    the mode it was in after: search, forced attention and rescoring run on a training model."""
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            yield model
    finally:
        model.train(was_training)


def attention_name(model: dict) -> str | None:
    """The attention column of the results table, from a saved config's model section, in
    today's shape or an older version's flat one (a run made before model.architecture existed
    is recurrent)."""
    model = model_in_sections(model)
    architecture = model.get("architecture", "rnn")
    family = model.get(architecture) or {}
    if architecture == "transformer":
        return f"{family.get('heads')}-head"
    return family.get("attention")


def describe(config: ModelConfig) -> str:
    """The family and its shape in a few words, for logs and benchmark output."""
    if config.architecture == "transformer":
        family = config.transformer
        return (f"transformer {family.encoder_layers}+{family.decoder_layers} layers, "
                f"d {family.d_model}, {family.heads} heads, ff {family.ff_size}, {family.norm}-norm")
    return f"rnn ({config.rnn.cell}), {config.rnn.attention} attention"


def count_parameters(model: nn.Module) -> int:
    """Trainable numbers; a tied matrix counts once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


__all__ = ["MAX_SOURCE_TOKENS", "TranslationModel", "attention_name", "build_model",
           "count_parameters", "describe", "has_alignment", "has_posterior", "inference",
           "target_order"]
