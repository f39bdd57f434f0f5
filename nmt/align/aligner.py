"""Align sentence pairs with a trained model's attention, in the gold file's units.

    aligner = AttentionAligner.from_checkpoint("runs/tatoeba/checkpoints/best.pt")
    aligner = AttentionAligner.from_checkpoints([a, b])  # an ensemble: its members' mean attention
    # both directions, with a reverse (English → Chinese) model: nmt/align/bidirectional.py
    soft = aligner.soft(pairs)                      # attention per pair, see SoftAlignment
    links = [s.links("argmax") for s in soft]       # {(Chinese char, English token)} per pair

Each side is segmented as training segmented it (`make_tokenizers` of the checkpoint's config),
forced-decoded (nmt/align/forced.py), and mapped onto the units by character offsets
(nmt/align/units.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from nmt.align.extract import extract_links
from nmt.align.forced import forced_attention
from nmt.align.links import AlignPair, Link
from nmt.align.units import coverage, merge_rows, project_source
from nmt.checkpoints.choose import load_chosen
from nmt.config.schema import Config
from nmt.data.subword import Subwords, SubwordSegmenter, models_for
from nmt.data.tokenize import ChineseSegmenter, make_tokenizers
from nmt.data.vocab import Vocab
from nmt.model import MAX_SOURCE_TOKENS

log = logging.getLogger(__name__)


@dataclass
class SoftAlignment:
    src_tokens: list[str]  # the model's source tokens
    tgt_tokens: list[str]  # the model's target tokens (the given English, as training split it)
    weights: np.ndarray | None  # (T, S) attention, one row per target token; None without attention
    src_cover: list[list[int]]  # per source token, the Chinese characters it covers
    tgt_cover: list[list[int]]  # per target token, the English units it covers
    n_tgt_units: int

    @property
    def unit_weights(self) -> np.ndarray | None:
        """(J, S): the rows merged into the J English units."""
        if self.weights is None:
            return None
        return merge_rows(self.weights, self.tgt_cover, self.n_tgt_units)

    def links(self, method: str = "argmax", threshold: float | None = 0.5) -> set[Link]:
        """(Chinese character, English unit) links by `method` (nmt/align/extract.py);
        `threshold` None: 0.5."""
        weights = self.unit_weights
        if weights is None:
            return set()
        return project_source(extract_links(weights, method, 0.5 if threshold is None else threshold),
                              self.src_cover)


class AttentionAligner:
    def __init__(self, model, config: Config, src_vocab: Vocab, tgt_vocab: Vocab,
                 device: torch.device | str | None = None, batch_size: int = 64,
                 subwords: dict[str, bytes] | None = None):
        """`config` is the one the model was trained with: it fixes the segmentation, and with
        `data.subword` the sentencepiece models ({lang: bytes}, by default those of its prepared
        folder) cut both sides into the pieces the model reads."""
        self.model, self.config = model, config
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.batch_size = batch_size
        self.segmenter: ChineseSegmenter | SubwordSegmenter
        self.segmenter, self.tokenizer = make_tokenizers(config.data)
        self.target_pieces: Subwords | None = None
        if config.data.subword != "none":
            models = models_for(config, subwords)
            assert models is not None  # with data.subword there are models, or models_for raised
            self.segmenter = SubwordSegmenter(self.segmenter, Subwords(models["zh"]))
            self.target_pieces = Subwords(models["en"])
        self.step: int | None = None
        self.paths: list[Path] = []  # the checkpoints, when loaded from files

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str = "auto",
                        batch_size: int = 64) -> AttentionAligner:
        """One checkpoint's model (nmt/checkpoints/choose.py loads it); `device`: auto, cpu or cuda."""
        return cls.from_checkpoints([path], device, batch_size)

    @classmethod
    def from_checkpoints(cls, paths: Sequence[str | Path], device: str = "auto",
                         batch_size: int = 64) -> AttentionAligner:
        """Several checkpoints align as one ensemble (nmt/model/ensemble.py): the mean of their
        attention, or of their posteriors; `step` is the first one's."""
        loaded = load_chosen(paths, device)
        aligner = cls(loaded.model, loaded.config, loaded.src_vocab, loaded.tgt_vocab, loaded.device,
                      batch_size, loaded.subwords)
        aligner.step = loaded.progress.get("step")
        aligner.paths = loaded.paths
        return aligner

    def _tokens(self, pair: AlignPair) -> tuple[list[str], list[str]]:
        if not (pair.src_units and pair.tgt_units):
            return [], []
        src = self.segmenter.segment(pair.src_text)[:MAX_SOURCE_TOKENS]
        tgt = self.tokenizer.tokenize(pair.tgt_text)
        if self.target_pieces is not None:
            tgt = self.target_pieces.encode(tgt)
        return src, tgt[:MAX_SOURCE_TOKENS]

    def soft(self, pairs: list[AlignPair], layer: int | None = None, head: int | None = None,
             posterior: bool = False) -> list[SoftAlignment]:
        """Forced-decoded attention for every pair, in order: the model's alignment, or decoder
        layer `layer`'s head `head` (heads averaged when None), or with `posterior` the recurrent
        model's posterior alignment (see forced_attention)."""
        tokens = [self._tokens(pair) for pair in pairs]
        weights = forced_attention(self.model, [self.src_vocab.encode(s) for s, _ in tokens],
                                   [self.tgt_vocab.encode(t) for _, t in tokens],
                                   self.batch_size, self.device, layer, head, posterior)
        if all(w is None for w in weights) and any(s for s, _ in tokens):
            log.warning("this model returns no attention weights (model.rnn.attention = %s): "
                        "every alignment is empty", self.config.model.rnn.attention)
        return [SoftAlignment(src, tgt, w, coverage(src, pair.src_units),
                              coverage(tgt, pair.tgt_units), len(pair.tgt_units))
                for (src, tgt), w, pair in zip(tokens, weights, pairs)]

    def align(self, pairs: list[AlignPair], method: str = "argmax",
              threshold: float = 0.5) -> list[set[Link]]:
        return [soft.links(method, threshold) for soft in self.soft(pairs)]
