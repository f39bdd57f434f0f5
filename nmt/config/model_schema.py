"""The model section of the config schema: the keys both families share, and one section per
family (`model.rnn`, `model.transformer`). Like nmt/config/schema.py, which holds the other
sections, each key's `#` comment is its meaning in docs/config.md (nmt/config/docs.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from nmt.config.checks import positive, probability


@dataclass
class RNNConfig:
    """The recurrent family (`model.architecture: rnn`): a bidirectional RNN encoder, attention,
    and an RNN decoder with a deep output layer (Bahdanau et al., 2015)."""

    cell: Literal["gru", "lstm"] = "gru"  # the recurrent cell of encoder and decoder
    embed_size: int = field(default=256, metadata=positive)  # word (or piece) embeddings, both sides
    encoder_hidden: int = field(default=256, metadata=positive)  # the BiRNN state h_j, per direction
    encoder_layers: int = field(default=1, metadata=positive)  # stacked BiRNN layers
    decoder_hidden: int = field(default=512, metadata=positive)  # the decoder's state s_i
    # F(s_{i-1}, h_j): additive (Bahdanau), dot, general (Luong), scaled_dot, or none (fixed context)
    attention: Literal["additive", "dot", "general", "scaled_dot", "none"] = "additive"
    # The query: s_{i-1} before the RNN step reads y_{i-1} (Bahdanau), or the new state s_i
    # after it (Luong's order, as Joey NMT's recurrent decoder does)
    attention_query: Literal["previous", "current"] = "previous"
    attention_size: int = field(default=256, metadata=positive)  # additive attention's hidden size
    readout_size: int = field(default=256, metadata=positive)  # deep output layer before the softmax
    input_feeding: bool = True  # feed the previous readout into the next decoder step


@dataclass
class TransformerConfig:
    """The Transformer family (`model.architecture: transformer`; Vaswani et al., 2017): self-
    and cross-attention layers, always scaled dot-product attention over several heads."""

    encoder_layers: int = field(default=1, metadata=positive)  # encoder layers
    decoder_layers: int = field(default=1, metadata=positive)  # decoder layers
    d_model: int = field(default=256, metadata=positive)  # width of embeddings and every layer
    heads: int = field(default=4, metadata=positive)  # attention heads; d_model / heads each
    ff_size: int = field(default=1024, metadata=positive)  # the feed-forward sublayer's inner width
    attention_dropout: float = field(default=0.1, metadata=probability)  # on attention weights
    activation_dropout: float = field(default=0.1, metadata=probability)  # inside feed-forward
    norm: Literal["pre", "post"] = "pre"  # LayerNorm before each sublayer (stable) or after
    positions: Literal["sinusoidal", "learned"] = "sinusoidal"  # position encodings
    max_positions: int = field(default=512, metadata=positive)  # learned positions: table size
    # The decoder layer whose cross-attention (heads averaged) is the alignment that plots,
    # <unk> replacement and the alignment tool read: -1 = the last, 0 = the first
    alignment_layer: int = -1


@dataclass
class ModelConfig:
    """The model: the keys both families share, and one section per family. Only the section of
    the chosen `architecture` may be set; a key of the other family is an error."""

    # rnn: the recurrent seq2seq (model.rnn); transformer: self- and cross-attention layers
    # (model.transformer)
    architecture: Literal["rnn", "transformer"] = "rnn"
    # RNN: on embeddings, between encoder layers and on the readout; Transformer: on embeddings
    # and residuals
    dropout: float = field(default=0.2, metadata=probability)
    # share target embeddings with the output layer (Press & Wolf, 2017)
    tie_embeddings: bool = False
    # The order the decoder writes the target in. A right_to_left model is trained on reversed
    # targets (y_n .. y_1) and its output is turned back before detokenizing; it rescores the
    # n-best lists of a left-to-right one (eval.rerank; Sennrich et al., 2016).
    target_order: Literal["left_to_right", "right_to_left"] = "left_to_right"
    # forward: Chinese → English. reverse: English → Chinese, trained on the same prepared data
    # with the sides swapped; it does not translate for users, it reads a translation y and says
    # how well y explains the source x, log p(x | y): the channel model that reranks a forward
    # model's n-best list (eval.rerank; Yee et al., 2019), and the other direction's attention.
    direction: Literal["forward", "reverse"] = "forward"
    rnn: RNNConfig = field(default_factory=RNNConfig)  # the recurrent family's keys
    transformer: TransformerConfig = field(default_factory=TransformerConfig)  # the Transformer's keys

    def to_dict(self) -> dict:
        """The shared keys and the chosen family's section: the other family's is not part of
        the recipe (and may not be written in a config)."""
        tree = dataclasses.asdict(self)
        for family in FAMILIES:
            if family != self.architecture:
                del tree[family]
        return tree


# The model families: model.architecture's values, each the name of its section under model:.
FAMILIES = ("rnn", "transformer")
