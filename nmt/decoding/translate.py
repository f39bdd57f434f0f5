"""Translation: raw Chinese lines in, detokenized English lines out.

A line goes the way training data went: the same normalization and segmentation
(`make_tokenizers(config.data)` of the checkpoint's config), the source vocabulary, then search,
optional unknown-word replacement, and Moses detokenization. With `data.subword` the words are
cut into the checkpoint's sentencepiece pieces, and a Translation holds whole words again (tokens,
source tokens and word-level attention: nmt/data/subword.py). Every input line gives exactly one
output; an empty line gives an empty one without running the model; a line longer than
MAX_SOURCE_TOKENS tokens is cut there, with a warning.

Two ways in:
- `Translator.from_checkpoint(path)` for the scripts, or `Translator(model, config, src_vocab,
  tgt_vocab)` for a model in memory;
- `translate_token_ids(model, src_ids, search_config)` for already-encoded sentences (training's
  dev BLEU).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

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
from nmt.data.tokenize import make_tokenizers
from nmt.data.vocab import BOS_ID, PAD_ID, Vocab
from nmt.errors import NMTError
from nmt.decoding.hypothesis import Hypothesis
from nmt.model import has_alignment
from nmt.runtime import pick_device
from nmt.decoding.search import replace_unknowns, search

log = logging.getLogger(__name__)

# The longest source the model is given. Training sentences have at most data.max_length (50)
# tokens; longer input is cut rather than decoded for minutes or run out of memory.
MAX_SOURCE_TOKENS = 200


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

    def attention_labels(self) -> list[str]:
        """Labels for the rows of `attention`: the tokens, and </s> when it has a row."""
        extra = 0 if self.attention is None else len(self.attention) - len(self.tokens)
        return self.tokens + ["</s>"] * extra


def decode_ids(model, src_ids: list[list[int]], config: SearchConfig,
               device: torch.device | str | None = None, keep_attention: bool = False,
               progress: Callable[[int], None] | None = None) -> list[list[Hypothesis]]:
    """Search every sentence of `src_ids` (source ids, no <s>/</s>); per sentence its n-best list.

    Sentences are sorted by length into batches of `config.batch_size` (less padding) and
    returned in input order. An empty sentence gets one empty hypothesis without running the
    model. The model is put in eval mode for the search and back into its former mode after.
    `progress(n)` is called after each batch with the number of sentences it held.
    """
    device = torch.device(device) if device is not None else next(model.parameters()).device
    results: list[list[Hypothesis] | None] = [None] * len(src_ids)
    order = []
    for i, ids in enumerate(src_ids):
        if len(ids):
            order.append(i)
        else:
            results[i] = [Hypothesis([], 0.0, 0.0, True, None)]
    order.sort(key=lambda i: -len(src_ids[i]))
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, len(order), config.batch_size):
                batch = order[start:start + config.batch_size]
                rows = [list(src_ids[i])[:MAX_SOURCE_TOKENS] for i in batch]
                lengths = torch.tensor([len(r) for r in rows])  # (B,)
                src = torch.full((len(rows), int(lengths.max())), PAD_ID, dtype=torch.long)  # (B, S)
                for row, ids in enumerate(rows):
                    src[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                found = search(model, src.to(device), lengths.to(device), config, keep_attention)
                for i, hyps in zip(batch, found):
                    results[i] = hyps
                if progress is not None:
                    progress(len(batch))
    finally:
        model.train(was_training)
    return results  # type: ignore[return-value]


def translate_token_ids(model, src_ids: list[list[int]], config: SearchConfig,
                        device: torch.device | str | None = None,
                        keep_attention: bool = True) -> list[Hypothesis]:
    """The best hypothesis for each encoded source sentence, in input order (see decode_ids)."""
    return [hyps[0] for hyps in decode_ids(model, src_ids, config, device, keep_attention)]


class Translator:
    """Raw Chinese lines → Translations, with a trained model and its vocabularies."""

    def __init__(self, model, config: Config, src_vocab: Vocab, tgt_vocab: Vocab,
                 search: SearchConfig | None = None, device: torch.device | str | None = None,
                 keep_attention: bool = False, subwords: dict[str, bytes] | None = None):
        """`config` is the one the model was trained with: it fixes the segmentation.
        `search` (default config.search) says how to decode; keep_attention fills
        Translation.attention. `subwords`: the sentencepiece models ({lang: bytes}) of a
        `data.subword` model; by default those of its prepared data folder."""
        self.model, self.config = model, config
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.search = search or config.search
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        self.keep_attention = keep_attention
        if self.search.replace_unk and not has_alignment(config.model):
            raise NMTError("search.replace_unk needs attention weights, but this model has "
                           "model.attention = none; set search.replace_unk=false")
        self.segmenter, self.detokenizer = make_tokenizers(config.data)
        self.subword = config.data.subword != "none"
        if self.subword:
            models = models_for(config, subwords)
            self.segmenter = SubwordSegmenter(self.segmenter, Subwords(models["zh"]))
        self.progress: dict = {}  # the checkpoint's training progress (step, ...), if any
        self.checkpoint: Path | None = None
        self.checkpoints: list[Path] = []  # every checkpoint, with an ensemble

    @classmethod
    def from_checkpoint(cls, path: str | Path, search: SearchConfig | None = None,
                        device: str = "auto", keep_attention: bool = False,
                        architecture: str | None = None) -> Translator:
        """Load a checkpoint; a missing, corrupt or incompatible one is an NMTError.
        `device`: auto (CUDA when there is one), cpu or cuda. `architecture`: the model family
        the caller's config names; a checkpoint of the other family is an NMTError."""
        from nmt.checkpoints.file import load_checkpoint, model_from_checkpoint

        checkpoint = load_checkpoint(path)
        model, config, src_vocab, tgt_vocab = model_from_checkpoint(checkpoint, str(path), architecture)
        device = pick_device(device)
        translator = cls(model.to(device), config, src_vocab, tgt_vocab, search, device,
                         keep_attention, checkpoint.get("subword"))
        translator.progress = dict(checkpoint.get("progress") or {})
        translator.checkpoint = Path(path)
        translator.checkpoints = [Path(path)]
        return translator

    @classmethod
    def from_checkpoints(cls, paths: list[str | Path], search: SearchConfig | None = None,
                         device: str = "auto", keep_attention: bool = False,
                         architecture: str | None = None) -> Translator:
        """One checkpoint, or several decoding as an ensemble (nmt/model/ensemble.py); the first
        one's config fixes the segmentation and its progress is reported."""
        from nmt.model.ensemble import load_ensemble

        if len(paths) == 1:
            return cls.from_checkpoint(paths[0], search, device, keep_attention, architecture)
        model, config, src_vocab, tgt_vocab, checkpoints = load_ensemble(paths)
        device = pick_device(device)
        translator = cls(model.to(device), config, src_vocab, tgt_vocab, search, device,
                         keep_attention, checkpoints[0].get("subword"))
        translator.progress = dict(checkpoints[0].get("progress") or {})
        translator.checkpoint = Path(paths[0])
        translator.checkpoints = [Path(p) for p in paths]
        return translator

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

    def translate(self, lines: list[str], first_line_number: int = 1,
                  progress: Callable[[int], None] | None = None) -> list[Translation]:
        """One Translation per line, in order. `progress(n)` is called after each batch."""
        sources = [self.segment(line, first_line_number + i) for i, line in enumerate(lines)]
        keep = self.keep_attention or self.search.replace_unk
        found = decode_ids(self.model, [self.src_vocab.encode(s) for s in sources], self.search,
                           self.device, keep_attention=keep, progress=progress)
        return [self._translation(src, hyps) for src, hyps in zip(sources, found)]

    def _translation(self, src_tokens: list[str], hyps: list[Hypothesis]) -> Translation:
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
        heads = None if attention is None else alignment_heads(
            self.model, self.src_vocab.encode(src_tokens), hyps[0].tokens, len(attention), self.device)
        if self.subword:  # what users see is whole words
            if heads is not None:
                heads = np.stack([merge_attention(head, best_tokens, src_tokens) for head in heads])
            best_tokens, src_tokens, attention = to_words(best_tokens, src_tokens, attention)
        return Translation(best_text, best_tokens, src_tokens, attention, hyps[0].score,
                           [(text, hyp.score) for (_, text), hyp in zip(outputs, hyps)], heads)


def alignment_heads(model, src_ids: list[int], tgt_ids: list[int], rows: int,
                    device: torch.device | str) -> np.ndarray | None:
    """Every head of the alignment layer for one output (heads, rows, S), or None when the
    model has a single head (or none).

    The search keeps only the heads' average; teacher-forcing its output once more in eval mode
    gives the same weights head by head. `rows`: the output's attention rows (its tokens, plus
    one for </s> when it ended with it)."""
    src = torch.tensor([src_ids], device=device)  # (1, S)
    tgt_in = torch.tensor([[BOS_ID] + list(tgt_ids)[: rows - 1]], device=device)  # (1, T)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            heads = model.alignment_heads(src, torch.tensor([src.size(1)]), tgt_in)
    finally:
        model.train(was_training)
    if heads is None or heads.size(1) < 2:
        return None
    return heads[0].float().cpu().numpy()  # (H, T, S)


def configured_checkpoints(config: Config) -> list[Path]:
    """The checkpoints `make eval` and `make translate` use when none is named: eval.ensemble,
    else the average eval.average asks for (written now from the run's kept checkpoints), else
    the run's eval.checkpoint (best, else last)."""
    if config.eval.ensemble:
        return [Path(p) for p in config.eval.ensemble]
    if config.eval.average:
        from nmt.checkpoints.averaging import parse_average, write_average

        return [write_average(config.run_dir, *parse_average(config.eval.average))]
    return [find_checkpoint(config, config.eval.checkpoint)]


def find_checkpoint(config: Config, which: str = "best") -> Path:
    """runs/<name>/checkpoints/<which>.pt, falling back to the other one with a warning."""
    folder = config.run_dir / "checkpoints"
    other = "last" if which == "best" else "best"
    for name in (which, other):
        path = folder / f"{name}.pt"
        if path.is_file():
            if name != which:
                log.warning("%s not found: using %s", folder / f"{which}.pt", path)
            return path
    raise NMTError(f"no checkpoint in {folder}: train this experiment first "
                   f"(`make train CONFIG=...`) or pass --checkpoint PATH")
