"""eflomal (Östling & Tiedemann, 2016), the statistical aligner attention is measured against.

eflomal is unsupervised: it learns from the training split plus the pairs to align, concatenated,
in both directions (Chinese→English and English→Chinese), and the two are symmetrized with
grow-diag-final-and (nmt/align/symmetrize.py; or intersected, or united). The Chinese side is given to it either
- `char`: one token per character (the gold's units; Latin/digit runs stay whole), or
- `word`: the training segmentation (jieba words), each link then projected onto the characters
  of its word, as the attention aligner projects its links.

eflomal's sampler is seeded from the clock: two runs differ slightly (a few tenths of AER).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

from nmt.align.links import AlignPair, Link, parse_links
from nmt.align.symmetrize import symmetrize
from nmt.align.units import coverage, project_source
from nmt.data.tokenize import _CHAR_TOKENS, ChineseSegmenter
from nmt.errors import NMTError

log = logging.getLogger(__name__)

UNITS = ("char", "word")


def characters(tokens: list[str]) -> list[str]:
    """Tokens → characters, a run of Latin letters or digits kept whole (the gold's rule)."""
    return [char for token in tokens for char in _CHAR_TOKENS.findall(token)]


def eflomal_links(src: list[list[str]], tgt: list[list[str]]) -> tuple[list[set[Link]], list[set[Link]]]:
    """Forward and backward links (source index, target index) of every pair, both non-empty."""
    try:
        from eflomal import Aligner
    except ImportError:
        raise NMTError("eflomal is not installed: `make setup` installs it, or "
                       "pip install 'eflomal>=2,<3'") from None
    if any(not s or not t for s, t in zip(src, tgt, strict=True)):
        raise ValueError("eflomal needs two non-empty sides in every pair")
    with tempfile.TemporaryDirectory(prefix="eflomal.") as folder:
        forward, backward = Path(folder) / "fwd", Path(folder) / "rev"
        Aligner().align([" ".join(s) for s in src], [" ".join(t) for t in tgt],
                        links_filename_fwd=str(forward), links_filename_rev=str(backward))
        return ([parse_links(line, "eflomal output") for line in forward.read_text().splitlines()],
                [parse_links(line, "eflomal output") for line in backward.read_text().splitlines()])


def align_with_eflomal(pairs: list[AlignPair], train_src: list[list[str]], train_tgt: list[list[str]],
                       units: str = "char", segmenter: ChineseSegmenter | None = None,
                       method: str = "grow-diag-final-and") -> list[set[Link]]:
    """(Chinese character, English unit) links for every pair, learnt together with the training
    pairs (tokenized: the prepared train.tok.zh/.en). `segmenter` splits the pairs' Chinese into
    words for units="word" (the training segmentation: make_tokenizers(config.data)); `method`
    symmetrizes the two directions (nmt/align/symmetrize.py)."""
    if units not in UNITS:
        raise NMTError(f"eflomal units = {units!r}; choose one of {UNITS}")
    if units == "word" and segmenter is None:
        raise ValueError("units='word' needs the training segmenter")
    tgt_words = [p.tgt_units for p in pairs]
    if units == "char":
        src_words = [p.src_units for p in pairs]
        train_src = [characters(s) for s in train_src]
    else:
        assert segmenter is not None  # units == "word" without one was refused above
        src_words = [segmenter.segment(p.src_text) if p.src_units else [] for p in pairs]
    kept = [i for i, p in enumerate(pairs) if src_words[i] and tgt_words[i]]
    train = [(s, t) for s, t in zip(train_src, train_tgt, strict=True) if s and t]
    start = time.perf_counter()
    forward, backward = eflomal_links([s for s, _ in train] + [src_words[i] for i in kept],
                                      [t for _, t in train] + [tgt_words[i] for i in kept])
    log.info("eflomal aligned %d pairs (%d to keep) in %.0f s", len(train) + len(kept), len(kept),
             time.perf_counter() - start)
    links: list[set[Link]] = [set() for _ in pairs]
    for n, i in enumerate(kept, start=len(train)):
        symmetric = symmetrize(forward[n], backward[n], method)
        links[i] = project_source(symmetric, coverage(src_words[i], pairs[i].src_units))
    return links
