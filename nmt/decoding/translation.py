"""What a translated line gives back (`Translation`), and how searched hypotheses become one.

The search works in ids and, with `data.subword`, in pieces; a user sees words. `TargetSide`
turns a sentence's n-best hypotheses into its Translation: the ids decoded, <unk> replaced by
the most-attended source word (search.replace_unk), pieces merged into words (tokens, source
tokens and word-level attention: nmt/data/subword.py), Moses detokenization, and for a model
with several heads (a Transformer) every head of the alignment layer, teacher-forced again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from nmt.data.tokenize import EnglishTokenizer
from nmt.data.subword import merge_attention, merge_pieces, source_word_of_pieces, to_words
from nmt.data.vocab import Vocab
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.search import replace_unknowns
from nmt.decoding.translate import alignment_heads, attention_layers
from nmt.model import TranslationModel


@dataclass
class Translation:
    text: str  # detokenized English; "" for an empty input line
    tokens: list[str]  # target tokens (whole words), after unknown-word replacement
    src_tokens: list[str]  # the segmented (and possibly cut) source, whole words
    # (T, S) float32: one row per output token, plus a last row for </s> when the output ended
    # with it (see `attention_labels`); None without attention or when it was not kept.
    attention: np.ndarray | None
    score: float  # length-normalized log-probability; 0.0 for an empty line
    n_best: list[tuple[str, float]] = field(default_factory=list)  # (text, score), best first
    # (heads, T, S): every head of the alignment layer, rows as in `attention` (a Transformer's
    # heads average to `attention`); only when attention is kept and the model has several heads.
    heads: np.ndarray | None = None
    # What the model read and wrote (pieces' ids with data.subword): TargetSide.cross_attention
    # teacher-forces them again.
    source_ids: list[int] = field(default_factory=list, repr=False)
    target_ids: list[int] = field(default_factory=list, repr=False)

    def attention_labels(self) -> list[str]:
        """Labels for the rows of `attention`: the tokens, and </s> when it has a row."""
        extra = 0 if self.attention is None else len(self.attention) - len(self.tokens)
        return self.tokens + ["</s>"] * extra


@dataclass
class TargetSide:
    """Hypotheses (ids) → Translations (words and text), for one model and its vocabularies."""

    model: TranslationModel | None  # None: an inference engine searched (its heads averaged)
    src_vocab: Vocab
    tgt_vocab: Vocab
    detokenizer: EnglishTokenizer  # Moses detokenization
    subword: bool  # data.subword: pieces become words again
    replace_unk: bool  # search.replace_unk
    keep_attention: bool  # fill Translation.attention (and heads)
    device: torch.device

    def translation(self, src_tokens: list[str], hyps: list[Hypothesis]) -> Translation:
        """The Translation of a segmented source from its searched hypotheses, best first."""
        if not src_tokens:
            return Translation("", [], [], None, 0.0, [])
        outputs = []
        # An <unk> piece is replaced by the whole source word of the piece it attended most.
        unk_sources = source_word_of_pieces(src_tokens) if self.subword else src_tokens
        for hyp in hyps:
            tokens = self.tgt_vocab.decode(hyp.tokens)
            if self.replace_unk:
                tokens = replace_unknowns(tokens, hyp.tokens, hyp.attention, unk_sources)
            words = merge_pieces(tokens) if self.subword else tokens
            outputs.append((tokens, self.detokenizer.detokenize(words)))
        best_tokens, best_text = outputs[0]
        attention = hyps[0].attention if self.keep_attention else None
        source_ids = self.src_vocab.encode(src_tokens)
        heads = None if attention is None or self.model is None or not self.several_heads \
            else alignment_heads(self.model, source_ids, hyps[0].tokens, len(attention), self.device)
        if self.subword:  # what users see is whole words
            if heads is not None:
                heads = np.stack([merge_attention(head, best_tokens, src_tokens) for head in heads])
            best_tokens, src_tokens, attention = to_words(best_tokens, src_tokens, attention)
        return Translation(best_text, best_tokens, src_tokens, attention, hyps[0].score,
                           [(text, hyp.score) for (_, text), hyp in zip(outputs, hyps)], heads,
                           source_ids, hyps[0].tokens)

    def cross_attention(self, translation: Translation) -> np.ndarray | None:
        """Every decoder layer's every head over the source, rows and columns as in
        `translation.attention`: (layers, heads, T, S); None for a model with one attention
        (the recurrent one) or a translation without attention."""
        if translation.attention is None or self.model is None or not self.several_heads:
            return None  # one attention (or an engine's average): the heatmap shows it already
        src, tgt = translation.source_ids, translation.target_ids
        rows = len(translation.attention) if not self.subword else len(tgt) + 1
        layers = attention_layers(self.model, src, tgt, rows, self.device)  # (L, H, T', S')
        if self.subword:  # pieces → whole words, as the attention shown
            pieces, src_pieces = self.tgt_vocab.decode(tgt), self.src_vocab.decode(src)
            layers = np.stack([[merge_attention(head, pieces, src_pieces) for head in layer]
                               for layer in layers])
        return layers[:, :, : len(translation.attention)]

    @property
    def several_heads(self) -> bool:
        """Whether the model attends with more than one head or layer (a Transformer): only then
        is a teacher-forced pass for every head worth its cost."""
        return self.model is not None and self.model.attention_grid != (1, 1)
