"""The dev sentences TensorBoard shows at every validation, and the gold links drawn on them.

The first dev lines are often two-token sentences (走开！, 滚！) whose heatmaps say nothing. The
examples are instead: first the dev pairs that have gold word alignments (`training.examples_gold`,
a file in the shared gold format), then dev sentences of typical length (6–12 source tokens),
distinct, in file order: a fixed choice, the same at every validation and on resuming.

A dev pair with gold links gets a second heatmap, `attention_gold/<i>`: the attention the model
pays while reading the reference (forced decoding, nmt/align/forced.py), with the gold links
marked on it, Sure ones solid and Possible ones dashed; the links go from the gold's units
(characters, Moses tokens) onto the model's tokens by character offsets (nmt/align/units.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from nmt.align.forced import forced_attention
from nmt.align.links import AlignPair, Link, read_gold
from nmt.align.units import coverage
from nmt.data.batching import in_model_order
from nmt.data.normalize import normalize_zh
from nmt.data.subword import merge_attention
from nmt.data.vocab import Vocab
from nmt.decoding.translate import alignment_heads
from nmt.errors import NMTError
from nmt.model import has_posterior, target_order
from nmt.training.board import Board
from nmt.training.validate import DevResult, DevSet

log = logging.getLogger(__name__)

TYPICAL_LENGTH = (6, 12)  # source tokens


def pick_examples(src_tokens: list[list[str]], count: int, first: Sequence[int] = ()) -> list[int]:
    """`count` dev indices: `first` (those with gold links), then distinct sources of typical
    length in file order, then any distinct ones if the dev set has too few of those."""
    chosen: list[int] = []
    seen: set[tuple[str, ...]] = set()
    low, high = TYPICAL_LENGTH
    candidates = (list(first) + [i for i, s in enumerate(src_tokens) if low <= len(s) <= high]
                  + list(range(len(src_tokens))))
    for i in candidates:
        if len(chosen) >= count:
            break
        key = tuple(src_tokens[i])
        if key and key not in seen:
            seen.add(key)
            chosen.append(i)
    return chosen


def match_gold(gold: list[AlignPair], dev_zh: list[str], dev_en_tokens: list[list[str]]
               ) -> dict[int, AlignPair]:
    """Dev index → its gold pair, where the Chinese (normalized, spaces aside) and the English
    tokens (case aside) are the same sentence."""
    def key(zh: str, en: list[str]) -> tuple[str, str]:
        return normalize_zh(zh).replace(" ", ""), "".join(en).lower()

    by_key = {key(pair.src_text, pair.tgt_units): pair for pair in gold}
    found = {}
    for i, (zh, en) in enumerate(zip(dev_zh, dev_en_tokens)):
        pair = by_key.get(key(zh, en))
        if pair is not None:
            found[i] = pair
    return found


def token_links(pair: AlignPair, links: set[Link], src_tokens: list[str],
                tgt_tokens: list[str]) -> set[tuple[int, int]]:
    """Gold links in units → (target token row, source token column) cells of a heatmap."""
    src_cover, tgt_cover = coverage(src_tokens, pair.src_units), coverage(tgt_tokens, pair.tgt_units)
    return {(t, k) for t, units in enumerate(tgt_cover) for k, chars in enumerate(src_cover)
            if any((c, j) in links for c in chars for j in units)}


@dataclass
class DevExamples:
    indices: list[int]  # dev pairs shown, in the order of their TensorBoard tags
    gold: dict[int, AlignPair] = field(default_factory=dict)  # those with gold links
    tgt_tokens: list[list[str]] = field(default_factory=list)  # every dev reference, tokenized

    @classmethod
    def choose(cls, src_tokens: list[list[str]], dev_zh: list[str], dev_en_tokens: list[list[str]],
               count: int, gold_path: str | None = None) -> DevExamples:
        gold: dict[int, AlignPair] = {}
        if gold_path is not None:
            if not Path(gold_path).is_file():
                log.warning("training.examples_gold = %s: file not found; the heatmaps show no "
                            "gold links", gold_path)
            else:
                try:
                    gold = match_gold(read_gold(gold_path), dev_zh, dev_en_tokens)
                except NMTError as error:
                    raise NMTError(f"training.examples_gold: {error}") from None
        indices = pick_examples(src_tokens, count, sorted(gold))
        return cls(indices, {i: gold[i] for i in indices if i in gold}, dev_en_tokens)

    def log(self, board: Board, step: int, model, dev: DevSet, result: DevResult,
            device: torch.device, tgt_vocab: Vocab) -> None:
        """The shown examples' translations and heatmaps (every head too), then the gold ones."""
        board.examples(step, [result.source_tokens[i] for i in self.indices],
                       [result.hypotheses[i] for i in self.indices],
                       [dev.references[i] for i in self.indices],
                       [result.hypothesis_tokens[i] for i in self.indices],
                       [result.attentions[i] for i in self.indices],
                       [example_heads(model, dev, result, i, device, tgt_vocab) for i in self.indices])
        self.log_gold(board, model, dev, step, device)

    def log_gold(self, board: Board, model, dev: DevSet, step: int, device: torch.device) -> None:
        """The reference's forced-decoding attention with the gold links, per example that has
        them; a recurrent model's posterior alignment (align.py --weights posterior) beside it."""
        shown = [(n, i) for n, i in enumerate(self.indices) if i in self.gold]
        if not shown or board.writer is None:
            return
        order = target_order(model)  # dev targets are in the model's order; forcing reads ours
        src_ids = [dev.examples[i].src for _, i in shown]
        tgt_ids = [in_model_order(dev.examples[i].tgt, order) for _, i in shown]
        kinds = ("attention", "posterior") if has_posterior(model) else ("attention",)
        for kind in kinds:
            weights = forced_attention(model, src_ids, tgt_ids, device=device,
                                       posterior=kind == "posterior")
            for (n, i), matrix in zip(shown, weights):
                if matrix is None:
                    continue
                pair, src, tgt = self.gold[i], dev.src_tokens[i], self.tgt_tokens[i]
                board.gold_alignment(step, n, matrix, src, tgt, token_links(pair, pair.sure, src, tgt),
                                     token_links(pair, pair.possible, src, tgt), kind)


def example_heads(model, dev: DevSet, result: DevResult, i: int, device: torch.device,
                  tgt_vocab: Vocab) -> np.ndarray | None:
    """Every head of the alignment layer for dev example i, for the TensorBoard grid: rows and
    columns as in its (word-level) attention."""
    rows = 0 if result.attentions[i] is None else len(result.attentions[i])
    if not rows:
        return None
    ids = result.hypothesis_ids[i]
    heads = alignment_heads(model, dev.examples[i].src, ids, len(ids) + 1, device)  # (H, T+1, S)
    if heads is not None and dev.subword:  # pieces → whole words, as the attention shown
        pieces = tgt_vocab.decode(ids)
        heads = np.stack([merge_attention(head, pieces, dev.src_tokens[i]) for head in heads])
    return None if heads is None else heads[:, :rows]  # no </s> row when the output had none
