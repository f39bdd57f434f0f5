"""The contract between a model and everything that uses one, written as code.

Training, validation, search, translation and alignment talk to a model only through this
interface; what differs between the families (nmt/model/seq2seq.py, nmt/model/transformer.py)
and an Ensemble of them (nmt/model/ensemble.py) stays behind it. mypy (`make lint`) holds the
three to it, and a test checks that each one is a `TranslationModel`.

    encode(src, src_lengths)             → memory: what the decoder reads, fixed per sentence
    init_state(memory)                   → the decoder state before the first target token
    decode_step(prev, state, memory)     → log-probs (B, V), the next state, weights (B, S) | None
    forward(src, src_lengths, tgt_in)    → teacher forcing: logits (B, T, V), weights (B, T, S)
    attention_heads(src, lengths, tgt_in)  → (B, layers, heads, T, S), for plots
    alignment_heads(src, lengths, tgt_in)  → the alignment layer's heads (B, heads, T, S)
    posterior_attention(src, lengths, tgt_in, tgt_out) → (B, T, S), where offers_posterior

Memory and state are the family's own types (Memory and DecoderState, TransformerMemory and
TransformerState, EnsembleParts); all that search needs of them is `select(index)`, the rows of
the hypotheses it keeps (`Reorderable`). Search needs only the first three methods
(`StepDecoder`), so a test's table of probabilities searches like a trained model.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, runtime_checkable

from torch import Tensor, nn

R = TypeVar("R", bound="Reorderable")


@runtime_checkable
class Reorderable(Protocol):
    """A memory or a decoder state: batch-first tensors whose rows beam search picks."""

    def select(self: R, index: Tensor) -> R:
        """Rows `index` (N,) of every tensor: N hypotheses, each from the row it extends."""
        ...


M = TypeVar("M", bound=Reorderable)  # the memory a model's encode returns
S = TypeVar("S", bound=Reorderable)  # the decoder state its decode_step carries


@runtime_checkable
class StepDecoder(Protocol[M, S]):
    """What greedy and beam search (nmt/decoding/search.py) need of a model."""

    def encode(self, src: Tensor, src_lengths: Tensor) -> M:
        """src (B, S) padded with PAD_ID, src_lengths (B,) → the memory the decoder reads."""
        ...

    def init_state(self, memory: M) -> S:
        """The decoder state before the first target token, one row per sentence."""
        ...

    def decode_step(self, prev_tokens: Tensor, state: S, memory: M
                    ) -> tuple[Tensor, S, Tensor | None]:
        """prev_tokens (B,) → log-probabilities (B, V), the next state, the alignment (B, S) or
        None for a model without attention."""
        ...


class TranslationModel(nn.Module, ABC, Generic[M, S]):
    """A trainable translation model: what search, training, translation and alignment need.

    A subclass implements search's three methods (`StepDecoder`), teacher forcing and the
    attention read-outs below; it is a torch Module, so it trains, moves and saves as one.
    """

    @abstractmethod
    def encode(self, src: Tensor, src_lengths: Tensor) -> M:
        """src (B, S) padded with PAD_ID, src_lengths (B,) → the memory the decoder reads."""

    @abstractmethod
    def init_state(self, memory: M) -> S:
        """The decoder state before the first target token, one row per sentence."""

    @abstractmethod
    def decode_step(self, prev_tokens: Tensor, state: S, memory: M
                    ) -> tuple[Tensor, S, Tensor | None]:
        """prev_tokens (B,) → log-probabilities (B, V), the next state, the alignment (B, S) or
        None without attention."""

    @abstractmethod
    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor
                ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: tgt_in (B, T) starts with <s> → logits (B, T, V) (log-probabilities
        serve too: a softmax gives the same distribution back), the alignment (B, T, S) or None."""

    if TYPE_CHECKING:  # nn.Module types a call as returning Any; a call runs forward
        def __call__(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor
                     ) -> tuple[Tensor, Tensor | None]: ...

    @abstractmethod
    def attention_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor | None:
        """Teacher forcing → every decoder layer's attention over the source, every head:
        (B, layers, heads, T, S); None for a model without attention."""

    @abstractmethod
    def alignment_heads(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor | None:
        """Every head of the alignment layer: (B, heads, T, S); None without attention."""

    @property
    @abstractmethod
    def attention_grid(self) -> tuple[int, int]:
        """(layers, heads) of the attention that attention_heads hands back; (1, 1) when there is
        one matrix only, and then a pass for every head is not worth its cost."""

    # The decoder layer (0-based) whose heads, averaged, are the alignment: an attribute, as the
    # Transformer's comes from its config at construction.
    alignment_layer: int

    @property
    @abstractmethod
    def target_order(self) -> str:
        """The order the model writes its target in: left_to_right or right_to_left."""

    @property
    def offers_posterior(self) -> bool:
        """Whether `posterior_attention` answers: recurrent models only."""
        return False

    def posterior_attention(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor,
                            tgt_out: Tensor) -> Tensor | None:
        """Teacher forcing → the posterior alignment (B, T, S), where `offers_posterior`."""
        raise NotImplementedError(f"{type(self).__name__} offers no posterior alignment; "
                                  f"ask offers_posterior first")
