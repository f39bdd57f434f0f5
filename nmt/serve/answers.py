"""What the decoding thread does with a batch of lines: one search, then each request's answer,
with only what it asked for (`Asked`) beyond the translation.

Everything that runs a model runs here, in the batcher's one thread, under its queue bound and
deadline (nmt/serve/batcher.py): the search, and for the requests that ask for them the word
links (teacher-forcing the translation through the forward and channel models where the run has
a channel model, nmt/align/translated.py) and a Transformer's every layer and head. A request
that asks for neither is searched without keeping attention at all: it costs its translation.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from nmt.align.bidirectional import BidirectionalAligner
from nmt.align.extract import extract_links
from nmt.align.links import Link, join_units, parse_pairs
from nmt.align.translated import align_lines, aligner_of
from nmt.align.units import unit_links_to_tokens
from nmt.decoding.translator import Translation, Translator


@dataclass(frozen=True)
class Asked:
    """What a request wants beyond the translation: `attention` (each line's attention rows, and
    for a Transformer every layer's every head) and `links` (word links)."""

    attention: bool = False
    links: bool = False


Key = tuple[int, int, Asked]  # (beam, n-best, asked): the requests that may share one search


class LineAnswers:
    """A run's Translator answering lines as the JSON API does (the batcher's `work`)."""

    def __init__(self, translator: Translator):
        self.translator = translator
        # The same models, searched without keeping attention: what a plain request costs.
        self.plain = copy.copy(translator)
        self.plain.keep_attention = False
        # Links from both directions where the run has a channel model (an engine has none)
        self.bidirectional = translator.reranker is not None and isinstance(
            aligner_of(translator), BidirectionalAligner)

    def search(self, lines: list[str], key: Key) -> list[Translation]:
        """One search for every line of a batch; attention is kept only where it is asked for,
        or where links are read from it (no channel model)."""
        beam, nbest, asked = key
        keep = asked.attention or (asked.links and not self.bidirectional)
        translator = self.translator if keep else self.plain
        return translator.translate(lines, beam_size=beam, nbest=nbest)

    def answer(self, found: list[Translation], key: Key) -> list[dict]:
        """One request's share of the search as its answer's lines (LineResult)."""
        asked = key[2]
        both: Sequence[set[Link] | None] = [None] * len(found)
        if asked.links and self.bidirectional:
            both = bidirectional_links(self.translator, found)
        return [describe(self.translator, result, asked, links) for result, links in zip(found, both)]


def bidirectional_links(translator: Translator, results: list[Translation]) -> list[set[Link]]:
    """Each line's links from both directions (nmt/align/translated.py: the forward model and the
    reverse one, teacher-forced on the translation), moved from characters and Moses tokens onto
    the words the page shows."""
    lines = [f"{join_units(r.src_tokens)}\t{r.text}" for r in results]
    pairs = parse_pairs(lines, "the page's translations")
    found = align_lines(translator, [p.src_text for p in pairs], [p.tgt_text for p in pairs])
    return [unit_links_to_tokens(set(links), r.src_tokens, p.src_units, r.tokens, p.tgt_units)
            for links, r, p in zip(found, results, pairs)]


def describe(translator: Translator, result: Translation, asked: Asked,
             links: set[Link] | None = None) -> dict:
    """One line's answer (a LineResult); what was not asked for is null. Rows of `attention` are
    the target tokens (no </s> row), columns the source tokens; `links` are [source index, target
    index]: those given (both directions', bidirectional_links), else read from the attention
    (grow-diag-final-and of its row- and column-wise argmax); `layers`, for a Transformer, every
    layer's every head."""
    rows = len(result.tokens)
    attention = None if result.attention is None else np.asarray(result.attention)[:rows]
    if asked.links and links is None:
        links = set() if attention is None else extract_links(attention, "grow-diag-final-and")
    layers = translator.cross_attention(result) if asked.attention else None
    return {
        "translation": result.text,
        "nbest": [{"text": text, "score": round(score, 4)} for text, score in result.n_best],
        "source_tokens": result.src_tokens,
        "target_tokens": result.tokens,
        "attention": None if attention is None or not asked.attention
        else np.round(attention, 4).tolist(),
        "links": None if links is None else [[int(s), int(t)] for s, t in sorted(links)],
        "layers": None if layers is None else np.round(layers[:, :, :rows], 4).tolist(),
    }
