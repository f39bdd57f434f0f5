"""Our Transformer (nmt/model/transformer.py) as a CTranslate2 model: a converter written against
`ctranslate2.specs`, the weight layout CTranslate2's own converters (fairseq, OpenNMT-py) fill.

What maps to what, per layer (CT2 scope ← our module):

    self_attention.linear[0]  ← SelfAttention.qkv      (3d, d): rows [q; k; v], as CT2 fuses them
    self_attention.linear[1]  ← SelfAttention.out
    attention.linear[0]       ← CrossAttention.query
    attention.linear[1]       ← CrossAttention.key_value (2d, d): rows [k; v]
    attention.linear[2]       ← CrossAttention.out
    ffn.linear_0 / linear_1   ← FeedForward.inner / outer (ReLU between)
    *.layer_norm              ← the Residual's norm: before the sublayer (pre-norm) or after the
                                residual sum (post-norm), as the spec's pre_norm flag says
    encoder/decoder.layer_norm ← encoder_norm / decoder_norm (pre-norm only; Identity in post-norm)
    decoder.projection        ← output_layer (weight and bias; the tied weight is aliased by CT2)

Heads split d into contiguous slices in both. Embeddings are scaled by sqrt(d)
(`scale_embeddings = True`) and positions added from an explicit table (our interleaved
sin/cos, or the learned one): CT2 raises for a position past its table, so the table has
POSITION_ROWS rows and the search (engine_search.py) never asks for more decoding steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import ctranslate2
import numpy as np
import torch
from ctranslate2.specs import common_spec, model_spec
from torch import Tensor, nn

from nmt.data.vocab import BOS, EOS, UNK, Vocab
from nmt.errors import NMTError
from nmt.model.transformer import Transformer
from nmt.model.transformer_layers import (CrossAttention, DecoderLayer, EncoderLayer,
                                          FeedForward, SelfAttention)

# Positions in the exported table: sources are cut to MAX_SOURCE_TOKENS (200) and outputs get
# ceil(ratio × source) + 10 steps, 410 at the default ratio 2; 1024 leaves room for ratio 5.
POSITION_ROWS = 1024
# Weight types the spec can be saved in (ctranslate2.specs.ModelSpec.optimize).
QUANTIZATIONS = model_spec.ACCEPTED_MODEL_TYPES


def _array(tensor: Tensor) -> np.ndarray:
    """A float32 copy on the CPU: CT2's int8 quantization scales its input arrays in place, and
    a numpy view would scale the PyTorch model's own weights with them."""
    return tensor.detach().to("cpu", torch.float32).numpy().copy()


def _set_linear(spec: common_spec.LinearSpec, linear: nn.Linear) -> None:
    spec.weight = _array(linear.weight)  # (out, in), as nn.Linear keeps it
    if linear.bias is not None:
        spec.bias = _array(linear.bias)  # (out,)


def _set_norm(spec: common_spec.LayerNormSpec, norm: nn.Module) -> None:
    norm = cast(nn.LayerNorm, norm)
    spec.gamma, spec.beta = _array(norm.weight), _array(norm.bias)  # (d,) each


def _set_self_attention(spec, attention: SelfAttention, norm: nn.Module) -> None:
    _set_linear(spec.linear[0], attention.qkv)  # (3d, d): [q; k; v], CT2's fused layout
    _set_linear(spec.linear[1], attention.out)
    _set_norm(spec.layer_norm, norm)


def _set_cross_attention(spec, attention: CrossAttention, norm: nn.Module) -> None:
    _set_linear(spec.linear[0], attention.query)
    _set_linear(spec.linear[1], attention.key_value)  # (2d, d): [k; v], CT2's fused layout
    _set_linear(spec.linear[2], attention.out)
    _set_norm(spec.layer_norm, norm)


def _set_feed_forward(spec, feed_forward: FeedForward, norm: nn.Module) -> None:
    _set_linear(spec.linear_0, feed_forward.inner)
    _set_linear(spec.linear_1, feed_forward.outer)
    _set_norm(spec.layer_norm, norm)


def position_table(model: Transformer, rows: int = POSITION_ROWS) -> np.ndarray:
    """(rows, d) float32: the encodings our model adds at positions 0 .. rows-1, computed by its
    own positions module: interleaved sin/cos, or the learned table, whose positions past
    max_positions share its last row (LearnedPositions clamps), as in our model."""
    with torch.no_grad():
        return _array(model.positions(0, rows))


def _set_stack(spec, embedding: nn.Embedding, positions: np.ndarray, final_norm: nn.Module
               ) -> None:
    """What encoder and decoder share: embeddings, their sqrt(d) scale, positions, final norm."""
    # The encoder's spec has a list of embeddings (one per source factor), the decoder's one.
    embeddings = spec.embeddings[0] if isinstance(spec.embeddings, list) else spec.embeddings
    embeddings.weight = _array(embedding.weight)  # (V, d)
    spec.scale_embeddings = True  # True: CT2 multiplies by sqrt(d), our model.embed_scale
    spec.position_encodings.encodings = positions  # (POSITION_ROWS, d)
    if isinstance(final_norm, nn.LayerNorm):  # pre-norm; post-norm has none (nn.Identity)
        _set_norm(spec.layer_norm, final_norm)


def _check_convertible(model: nn.Module, src_vocab: Vocab, tgt_vocab: Vocab) -> Transformer:
    """The model itself, typed, when CT2 can run it as we do; NMTError saying why not otherwise."""
    if not isinstance(model, Transformer):
        raise NMTError(f"only a Transformer (model.architecture: transformer) can be exported to "
                       f"CTranslate2, not {type(model).__name__}")
    if model.config.target_order != "left_to_right":
        raise NMTError("a right_to_left model (model.target_order) cannot be exported to "
                       "CTranslate2: it writes reversed outputs and only rescores others' n-best lists")
    if model.config.direction != "forward":
        raise NMTError("a reverse-direction (channel) model (model.direction: reverse) cannot be "
                       "exported to CTranslate2: it scores translations, it does not translate")
    sizes = (model.src_embed.num_embeddings, model.tgt_embed.num_embeddings)
    if sizes != (len(src_vocab), len(tgt_vocab)):
        raise NMTError(f"the vocabularies ({len(src_vocab)}, {len(tgt_vocab)} tokens) are not the "
                       f"model's ({sizes[0]}, {sizes[1]}): export with the run's own vocabularies")
    return model


def transformer_spec(model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab
                     ) -> ctranslate2.specs.TransformerSpec:
    """Every weight of `model` in a CT2 TransformerSpec (float32), with our vocabularies in
    Vocab.itos order (ids map 1:1) and our <unk>, <s>, </s>; nothing is added to the source,
    and the decoder starts from <s>. NMTError for a model CT2 cannot run as we do."""
    model = _check_convertible(model, src_vocab, tgt_vocab)
    pre_norm = model.config.transformer.norm == "pre"
    encoders = cast(list[EncoderLayer], list(model.encoder_layers))
    decoders = cast(list[DecoderLayer], list(model.decoder_layers))
    spec = ctranslate2.specs.TransformerSpec(
        ctranslate2.specs.TransformerEncoderSpec(len(encoders), model.heads, pre_norm=pre_norm),
        ctranslate2.specs.TransformerDecoderSpec(
            len(decoders), model.heads, pre_norm=pre_norm,
            # our alignment is the average of every head of this layer
            alignment_layer=model.alignment_layer, alignment_heads=model.heads))
    positions = position_table(model)
    _set_stack(spec.encoder, model.src_embed, positions, model.encoder_norm)
    for layer_spec, encoder in zip(spec.encoder.layer, encoders):
        _set_self_attention(layer_spec.self_attention, encoder.self_attention,
                            encoder.attention_residual.norm)
        _set_feed_forward(layer_spec.ffn, encoder.feed_forward, encoder.ff_residual.norm)
    _set_stack(spec.decoder, model.tgt_embed, positions, model.decoder_norm)
    for layer_spec, decoder in zip(spec.decoder.layer, decoders):
        _set_self_attention(layer_spec.self_attention, decoder.self_attention,
                            decoder.self_residual.norm)
        _set_cross_attention(layer_spec.attention, decoder.cross_attention,
                             decoder.cross_residual.norm)
        _set_feed_forward(layer_spec.ffn, decoder.feed_forward, decoder.ff_residual.norm)
    _set_linear(spec.decoder.projection, model.output_layer)  # (V, d) and (V,)
    _set_vocabularies(spec, model, src_vocab, tgt_vocab)
    return spec


def _set_vocabularies(spec, model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab) -> None:
    spec.register_source_vocabulary(list(src_vocab.itos))
    spec.register_target_vocabulary(list(tgt_vocab.itos))
    config = spec.config
    config.unk_token, config.bos_token, config.eos_token = UNK, BOS, EOS
    config.decoder_start_token = BOS
    config.add_source_bos = config.add_source_eos = False  # our sources have neither
    norm = cast(nn.LayerNorm, model.encoder_layers[0].attention_residual.norm)
    config.layer_norm_epsilon = float(norm.eps)  # torch's 1e-5, not left to CT2's default


def write_engine_folder(model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab, folder: Path,
                        quantization: str) -> None:
    """Convert `model`, check the spec, quantize its weights to `quantization` (one of
    QUANTIZATIONS: float32, int8, int8_float32, bfloat16, ...) and save the CT2 model
    (model.bin, config.json, the vocabularies) into `folder`, an existing empty folder."""
    folder = Path(folder)
    if quantization not in QUANTIZATIONS:
        raise NMTError(f"quantization {quantization!r} is not one CTranslate2 offers: "
                       f"{', '.join(QUANTIZATIONS)}")
    if not folder.is_dir() or any(folder.iterdir()):
        raise NMTError(f"{folder}: the CTranslate2 model goes into an existing empty folder")
    spec = transformer_spec(model, src_vocab, tgt_vocab)
    try:
        spec.validate()  # every weight set, vocabulary sizes right; arrays become CT2 variables
        spec.optimize(quantization=quantization)  # aliases tied weights, then quantizes
    except ValueError as error:
        raise NMTError(f"the model could not be converted to CTranslate2: {error}") from None
    spec.save(str(folder))
