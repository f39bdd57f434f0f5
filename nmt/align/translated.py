"""Word alignment with a Translator's own models: what the web page draws, and the Python API's.

    from nmt import Translator
    from nmt.align.translated import align_lines
    translator = Translator.from_run("runs/tatoeba")
    align_lines(translator, ["汤姆喜欢猫。"], ["Tom likes cats."])   # [[(0, 0), (1, 0), ...]]

The aligner shares the Translator's loaded models: its forward model(s), and, where the
Translator's plan reranks with a channel model (a reverse, English → Chinese one), that model as
the other direction (nmt/align/bidirectional.py). It is built once per Translator.
"""

from __future__ import annotations

import weakref
from typing import cast

from nmt.align.agreement import BIDIRECTIONAL_METHODS, DEFAULT_BIDIRECTIONAL_METHOD
from nmt.align.aligner import AttentionAligner
from nmt.align.bidirectional import BidirectionalAligner
from nmt.align.links import parse_pairs
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.model import TranslationModel, has_posterior

_aligners: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def aligner_of(translator: Translator) -> AttentionAligner | BidirectionalAligner:
    """The aligner of `translator`'s models: both directions when its plan reranks with a
    channel model, else its own attention (made on first use, then kept with it)."""
    if translator not in _aligners:
        forward = AttentionAligner(translator.model, translator.config, translator.src_vocab,
                                   translator.tgt_vocab, translator.device,
                                   subwords=translator.subwords)
        rescorers = translator.reranker.rescorers if translator.reranker is not None else []
        channel = next((r for r in rescorers if r.reverse), None)
        # the plan's channel model, loaded and checked against the translator's vocabularies there
        _aligners[translator] = forward if channel is None else BidirectionalAligner(
            forward, cast(TranslationModel, channel.model), channel.path)
    return _aligners[translator]


def align_lines(translator: Translator, zh_lines: list[str], en_lines: list[str],
                method: str | None = None) -> list[list[tuple[int, int]]]:
    """Word links of each (Chinese, English) pair: Pharaoh pairs (Chinese character index,
    English Moses-token index), as `make align` writes them. With a channel model, both
    directions' alignments combined by `method` (default DEFAULT_BIDIRECTIONAL_METHOD,
    nmt/align/agreement.py); else, or for a one-direction `method` (argmax, threshold), the
    model's own attention read by `method` (default grow-diag-final-and). Each model is read as
    its posterior alignment where it has one."""
    if len(zh_lines) != len(en_lines):
        raise NMTError(f"align: {len(zh_lines)} Chinese lines but {len(en_lines)} English lines")
    pairs = parse_pairs([f"{zh}\t{en}" for zh, en in zip(zh_lines, en_lines)], "align")
    aligner = aligner_of(translator)
    if isinstance(aligner, BidirectionalAligner) and method in (None, *BIDIRECTIONAL_METHODS):
        both = method or DEFAULT_BIDIRECTIONAL_METHOD
        return [sorted(pair.links(both)) for pair in aligner.soft(pairs)]
    forward = aligner.forward if isinstance(aligner, BidirectionalAligner) else aligner
    soft = forward.soft(pairs, posterior=has_posterior(translator.model))
    return [sorted(pair.links(method or "grow-diag-final-and")) for pair in soft]
