"""The Translator: raw Chinese lines in, detokenized English lines out — the Python API.

    from nmt import Translator
    translator = Translator.from_run("runs/tatoeba")
    [result] = translator.translate(["汤姆喜欢猫。"], beam_size=5)
    result.text, result.src_tokens, result.tokens, result.attention   # (T, S) numpy

A line goes the way training data went: the same normalization and segmentation
(`make_tokenizers(config.data)` of the checkpoint's config), the source vocabulary, then search,
optional unknown-word replacement, and Moses detokenization. With `data.subword` the words are
cut into the checkpoint's sentencepiece pieces, and a Translation holds whole words again (tokens,
source tokens and word-level attention: nmt/data/subword.py). Every input line gives exactly one
output; an empty line gives an empty one without running the model; a line longer than
MAX_SOURCE_TOKENS tokens is cut there, with a warning.

Ways in: `Translator.from_run(run_dir)` (the checkpoint `make eval` scores), `from_config(config)`,
`from_checkpoint(path)` / `from_checkpoints(paths)` (several: an ensemble), or
`Translator(model, config, src_vocab, tgt_vocab)` for a model in memory.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import torch

from nmt.align.agreement import BIDIRECTIONAL_METHODS, DEFAULT_BIDIRECTIONAL_METHOD
from nmt.align.aligner import AttentionAligner
from nmt.align.bidirectional import BidirectionalAligner
from nmt.align.links import parse_pairs
from nmt.checkpoints.choose import choose_checkpoints, load_chosen, rerank_checkpoints
from nmt.config.loader import load_saved_config
from nmt.config.tuned import with_tuned_search
from nmt.config.schema import Config, SearchConfig
from nmt.data.subword import (
    SubwordSegmenter,
    Subwords,
    merge_attention,
    merge_pieces,
    models_for,
    source_word_of_pieces,
    to_words,
)
from nmt.data.tokenize import ChineseSegmenter, make_tokenizers
from nmt.data.vocab import Vocab
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.rerank import Reranker
from nmt.decoding.search import replace_unknowns
from nmt.decoding.translate import alignment_heads, attention_layers, decode_ids
from nmt.errors import NMTError
from nmt.model import MAX_SOURCE_TOKENS, TranslationModel, has_alignment, has_posterior
from nmt.runtime import use_bf16

log = logging.getLogger(__name__)


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
    # What the model read and wrote (pieces' ids with data.subword): Translator.cross_attention
    # teacher-forces them again.
    source_ids: list[int] = field(default_factory=list, repr=False)
    target_ids: list[int] = field(default_factory=list, repr=False)

    def attention_labels(self) -> list[str]:
        """Labels for the rows of `attention`: the tokens, and </s> when it has a row."""
        extra = 0 if self.attention is None else len(self.attention) - len(self.tokens)
        return self.tokens + ["</s>"] * extra


class Translator:
    """Raw Chinese lines → Translations, with a trained model and its vocabularies."""

    def __init__(self, model: TranslationModel, config: Config, src_vocab: Vocab, tgt_vocab: Vocab,
                 search: SearchConfig | None = None, device: torch.device | str | None = None,
                 keep_attention: bool = False, subwords: dict[str, bytes] | None = None):
        """`config` is the one the model was trained with: it fixes the segmentation.
        `search` (default config.search) says how to decode; keep_attention fills
        Translation.attention. `subwords`: the sentencepiece models ({lang: bytes}) of a
        `data.subword` model; by default those of its prepared data folder."""
        if config.model.direction == "reverse":
            raise NMTError("this checkpoint is a reverse (English → Chinese) model "
                           "(model.direction = reverse): it scores translations as a channel "
                           "model, it does not translate; name it in a forward run's eval.rerank")
        self.model, self.config = model, config
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.search = search or config.search
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.keep_attention = keep_attention
        if self.search.replace_unk and not has_alignment(config.model):
            raise NMTError("search.replace_unk needs attention weights, but this model has "
                           "model.rnn.attention = none; set search.replace_unk=false")
        self.segmenter: ChineseSegmenter | SubwordSegmenter
        self.segmenter, self.detokenizer = make_tokenizers(config.data)
        self.subword = config.data.subword != "none"
        if self.subword:
            models = models_for(config, subwords)
            assert models is not None  # with data.subword there are models, or models_for raised
            self.segmenter = SubwordSegmenter(self.segmenter, Subwords(models["zh"]))
        self.subwords = subwords
        self.run_name = config.name  # the run it was trained in; from_run: the folder's name
        self.progress: dict = {}  # the checkpoint's training progress (step, ...), if any
        self.checkpoint: Path | None = None
        self.checkpoints: list[Path] = []  # every checkpoint, with an ensemble
        # eval.rerank's rescoring models (nmt/decoding/rerank.py's Reranker): when set, the search
        # keeps the whole beam as its n-best list and they choose among it
        self.reranker: Reranker | None = None

    @classmethod
    def from_checkpoint(cls, path: str | Path, search: SearchConfig | None = None,
                        device: str = "auto", keep_attention: bool = False,
                        architecture: str | None = None) -> Translator:
        """Load a checkpoint; a missing, corrupt or incompatible one is an NMTError.
        `device`: auto (CUDA when there is one), cpu or cuda. `architecture`: the model family
        the caller's config names; a checkpoint of the other family is an NMTError."""
        return cls.from_checkpoints([path], search, device, keep_attention, architecture)

    @classmethod
    def from_checkpoints(cls, paths: Sequence[str | Path], search: SearchConfig | None = None,
                         device: str = "auto", keep_attention: bool = False,
                         architecture: str | None = None) -> Translator:
        """One checkpoint, or several decoding as an ensemble (nmt/model/ensemble.py), loaded by
        nmt/checkpoints/choose.py; the first one's config fixes the segmentation and its
        progress is reported."""
        loaded = load_chosen(paths, device, architecture)
        translator = cls(loaded.model, loaded.config, loaded.src_vocab, loaded.tgt_vocab, search,
                         loaded.device, keep_attention, loaded.subwords)
        translator.progress = loaded.progress
        translator.checkpoint = loaded.paths[0]
        translator.checkpoints = loaded.paths
        return translator

    @classmethod
    def from_config(cls, config: Config, checkpoint: str | Path | list | None = None,
                    device: str | None = None, keep_attention: bool = True) -> Translator:
        """The checkpoint(s) `make eval` scores for `config` (nmt/checkpoints/choose.py), or
        those named; decoding as `config.search` says, its n-best reranked by eval.rerank's models
        and the run's reverse members (training.reverse_members) when it has any."""
        paths = choose_checkpoints(config, checkpoint).paths
        translator = cls.from_checkpoints(paths, config.search, device or config.training.device,
                                          keep_attention, config.model.architecture)
        translator.run_name = config.name
        rescorers = rerank_checkpoints(config)
        if rescorers:  # n-best reranking, as make eval scores it (nmt/decoding/rerank.py)
            translator.reranker = Reranker.load(rescorers, config.eval.rerank_weights, translator)
        return translator

    @classmethod
    def from_run(cls, run_dir: str | Path, device: str = "auto",
                 keep_attention: bool = True) -> Translator:
        """A trained run folder (runs/<name>/, with the config.yaml training saved there): its
        checkpoint as `make eval` chooses it, even when the folder has moved."""
        run_dir = Path(run_dir)
        saved = run_dir / "config.yaml"
        if not saved.is_file():
            raise NMTError(f"{run_dir}: not a run folder (no config.yaml); train one with "
                           f"`make train` or name a checkpoint with Translator.from_checkpoint")
        config = load_saved_config(saved)
        config = dataclasses.replace(config, runs_dir=str(run_dir.parent), name=run_dir.name)
        # the search make tune chose on dev, when it has been run
        return cls.from_config(with_tuned_search(config), device=device,
                               keep_attention=keep_attention)

    def segment(self, line: str, number: int | None = None) -> list[str]:
        """Source tokens (pieces with subwords) of a raw line, cut to MAX_SOURCE_TOKENS; [] for a
        blank line."""
        tokens = self.segmenter.segment(line) if line.strip() else []
        if len(tokens) > MAX_SOURCE_TOKENS:
            where = f"line {number}" if number is not None else "a line"
            log.warning("%s has %d tokens: translating only the first %d", where, len(tokens),
                        MAX_SOURCE_TOKENS)
            tokens = tokens[:MAX_SOURCE_TOKENS]
        return tokens

    def translate(self, lines: list[str], beam_size: int | None = None, nbest: int | None = None,
                  first_line_number: int = 1,
                  progress: Callable[[int], None] | None = None) -> list[Translation]:
        """One Translation per line, in order. `beam_size` and `nbest` override the search
        config for this call; `progress(n)` is called after each batch."""
        search = self.search
        if beam_size is not None or nbest is not None:
            search = dataclasses.replace(search, beam_size=beam_size or search.beam_size,
                                         n_best=nbest or search.n_best)
        sources = [self.segment(line, first_line_number + i) for i, line in enumerate(lines)]
        keep = self.keep_attention or search.replace_unk
        src_ids = [self.src_vocab.encode(s) for s in sources]
        # With rescoring models the whole beam is the n-best list they choose from.
        searched = search if self.reranker is None else dataclasses.replace(search, n_best=search.beam_size)
        found = decode_ids(self.model, src_ids, searched, self.device, keep_attention=keep,
                           progress=progress, workers=search.workers, reranker=self.reranker,
                           bf16=self.uses_bf16(search))
        if self.reranker is not None:
            found = [hyps[: search.n_best] for hyps in found]
        return [self.translation_of(src, hyps) for src, hyps in zip(sources, found)]

    def uses_bf16(self, search: SearchConfig | None = None) -> bool:
        """Whether `search` (default self.search) decodes under bfloat16 autocast here."""
        return use_bf16((search or self.search).bf16, self.device, "search.bf16")

    def cross_attention(self, translation: Translation) -> np.ndarray | None:
        """Every decoder layer's every head over the source, rows and columns as in
        `translation.attention`: (layers, heads, T, S); None for a model with one attention
        (the recurrent one) or a translation without attention."""
        if translation.attention is None or not self._several_heads():
            return None  # one attention: the heatmap shows it already
        src, tgt = translation.source_ids, translation.target_ids
        rows = len(translation.attention) if not self.subword else len(tgt) + 1
        layers = attention_layers(self.model, src, tgt, rows, self.device)  # (L, H, T', S')
        if self.subword:  # pieces → whole words, as the attention shown
            pieces, src_pieces = self.tgt_vocab.decode(tgt), self.src_vocab.decode(src)
            layers = np.stack([[merge_attention(head, pieces, src_pieces) for head in layer]
                               for layer in layers])
        return layers[:, :, : len(translation.attention)]

    def align(self, zh_lines: list[str], en_lines: list[str],
              method: str | None = None) -> list[list[tuple[int, int]]]:
        """Word links of each (Chinese, English) pair: Pharaoh pairs (Chinese character index,
        English Moses-token index), as `make align` writes them. With a reverse model among
        eval.rerank's, both directions' alignments combined by `method` (default
        DEFAULT_BIDIRECTIONAL_METHOD, nmt/align/agreement.py); else, or for a one-direction
        `method` (argmax, threshold), the model's own attention read by `method` (default
        grow-diag-final-and). Each model is read as its posterior alignment where it has one."""
        if len(zh_lines) != len(en_lines):
            raise NMTError(f"align: {len(zh_lines)} Chinese lines but {len(en_lines)} English lines")
        pairs = parse_pairs([f"{zh}\t{en}" for zh, en in zip(zh_lines, en_lines)], "align")
        aligner = self.aligner
        if isinstance(aligner, BidirectionalAligner) and method in (None, *BIDIRECTIONAL_METHODS):
            both = method or DEFAULT_BIDIRECTIONAL_METHOD
            return [sorted(pair.links(both)) for pair in aligner.soft(pairs)]
        forward = aligner.forward if isinstance(aligner, BidirectionalAligner) else aligner
        soft = forward.soft(pairs, posterior=has_posterior(self.model))
        return [sorted(pair.links(method or "grow-diag-final-and")) for pair in soft]

    @functools.cached_property
    def aligner(self) -> AttentionAligner | BidirectionalAligner:
        """What `align` aligns with, made on first use (its segmenters and subword models are
        built once): both directions when eval.rerank's models (from_config) include a reverse
        one, else the model's own attention."""
        forward = AttentionAligner(self.model, self.config, self.src_vocab, self.tgt_vocab,
                                   self.device, subwords=self.subwords)
        rescorers = self.reranker.rescorers if self.reranker is not None else []
        reverse = next((r for r in rescorers if r.reverse), None)
        if reverse is None:
            return forward
        # eval.rerank's reverse model, loaded and checked against this one's vocabularies there
        return BidirectionalAligner(forward, cast(TranslationModel, reverse.model), reverse.path)

    def translation_of(self, src_tokens: list[str], hyps: list[Hypothesis]) -> Translation:
        """The Translation of a segmented source from its searched hypotheses, best first."""
        if not src_tokens:
            return Translation("", [], [], None, 0.0, [])
        outputs = []
        # An <unk> piece is replaced by the whole source word of the piece it attended most.
        unk_sources = source_word_of_pieces(src_tokens) if self.subword else src_tokens
        for hyp in hyps:
            tokens = self.tgt_vocab.decode(hyp.tokens)
            if self.search.replace_unk:
                tokens = replace_unknowns(tokens, hyp.tokens, hyp.attention, unk_sources)
            words = merge_pieces(tokens) if self.subword else tokens
            outputs.append((tokens, self.detokenizer.detokenize(words)))
        best_tokens, best_text = outputs[0]
        attention = hyps[0].attention if self.keep_attention else None
        source_ids = self.src_vocab.encode(src_tokens)
        heads = None if attention is None or not self._several_heads() else alignment_heads(
            self.model, source_ids, hyps[0].tokens, len(attention), self.device)
        if self.subword:  # what users see is whole words
            if heads is not None:
                heads = np.stack([merge_attention(head, best_tokens, src_tokens) for head in heads])
            best_tokens, src_tokens, attention = to_words(best_tokens, src_tokens, attention)
        return Translation(best_text, best_tokens, src_tokens, attention, hyps[0].score,
                           [(text, hyp.score) for (_, text), hyp in zip(outputs, hyps)], heads,
                           source_ids, hyps[0].tokens)

    def _several_heads(self) -> bool:
        """Whether the model attends with more than one head or layer (a Transformer): only then
        is a teacher-forced pass for every head worth its cost."""
        return self.model.attention_grid != (1, 1)

    @property
    def architecture(self) -> str:
        return self.config.model.architecture


