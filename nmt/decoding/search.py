"""Decoding: from a batch of source sentences to the best target sequences.

`search` is the one entry point: greedy search (nmt/decoding/greedy.py) for beam size 1, beam
search (nmt/decoding/beam.py, its state in beam_state.py) otherwise. Both work on the whole batch
at once; the only Python loop is over time steps. Sentences that are done leave the batch, so the
last steps run on the few long sentences only. All three take `(model, src, src_lengths, *, ...)`
with the search parameters as keywords, in one order: config (`search` and `beam_search`: the
search.* settings), alpha, max_length_ratio (greedy_search), keep_attention. The model is
anything with encode / init_state / decode_step (nmt.model.interface.StepDecoder).

Scores are GNMT-normalized (Wu et al., 2016), with a word reward (He et al., 2016) and GNMT's
coverage penalty:

    score(y) = log P(y|x) / lp(|y|) + reward · |y| + β Σ_j log min(Σ_i a_ij, 1)

with lp(l) = ((5 + l) / 6) ** alpha and |y| = l counting every decoding step, </s> included.
alpha = 0 ranks by plain log-probability; larger alphas and rewards favour longer outputs. The
coverage term sums, for each real source token j, the attention a_ij it received over the
output's steps: 0 once every source token got a total of 1, lower for each one left out (an
ensemble's attention is its members' mean, a Transformer's its alignment layer's). It ranks the
open hypotheses too: at each step the beam keeps the 2K candidates best by log-probability plus
the coverage term of their attention so far, so a hypothesis that skips a source word falls out
of the beam, not only out of the final ranking. (All candidates of a sentence have the same
length at a step, so the length terms change only how finished hypotheses of different lengths
compare, and when a search may stop.)

`replace_unknowns` puts source tokens in place of <unk> outputs, by the attention.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from nmt.config.schema import SearchConfig
from nmt.data.vocab import UNK_ID
# beam_search, greedy_search, Scoring and max_output_lengths are importable from here too.
from nmt.decoding.beam import beam_search
from nmt.decoding.beam_state import Scoring  # noqa: F401
from nmt.decoding.greedy import greedy_search
from nmt.decoding.hypothesis import Hypothesis
from nmt.decoding.output_rules import max_output_lengths  # noqa: F401
from nmt.errors import NMTError
from nmt.model.interface import M, S, StepDecoder


@torch.inference_mode()
def search(model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, *, config: SearchConfig,
           keep_attention: bool = True) -> list[list[Hypothesis]]:
    """src (B, S) padded with PAD_ID, src_lengths (B,) → per sentence its n-best list, best first.

    The model must be in eval mode (dropout off); `nmt.decoding.translate` takes care of that.
    """
    if config.n_best > config.beam_size:
        raise NMTError(f"search.n_best ({config.n_best}) must be <= search.beam_size "
                       f"({config.beam_size}): a beam of K keeps at most K hypotheses")
    if config.beam_size == 1:
        return greedy_search(model, src, src_lengths, alpha=config.length_penalty,
                             max_length_ratio=config.max_length_ratio,
                             keep_attention=keep_attention)
    return beam_search(model, src, src_lengths, config=config, keep_attention=keep_attention)


def replace_unknowns(tokens: list[str], ids: list[int], attention, src_tokens: list[str]
                     ) -> list[str]:
    """Each <unk> in the output becomes the source token attended most when it was produced.

    Names and numbers the target vocabulary lacks (`汤姆` is known, `Zhang` may not be) often pass
    through unchanged this way (Luong et al., 2015). Without attention the tokens stay as they are.
    """
    if attention is None or not src_tokens:
        return list(tokens)
    attention = np.asarray(attention)  # (T, S)
    return [src_tokens[int(attention[i].argmax())] if ids[i] == UNK_ID and i < len(attention)
            else token for i, token in enumerate(tokens)]
