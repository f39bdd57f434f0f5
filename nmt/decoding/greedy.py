"""Greedy search: the most probable next token at every step, for a whole batch at once.

Sentences that end leave the batch, so the last steps run on the few long ones only. It returns
what beam search with beam size 1 returns (nmt/decoding/beam.py), more cheaply.
"""

from __future__ import annotations

import torch
from torch import Tensor

from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmt.decoding.hypothesis import Hypothesis, length_penalty
from nmt.decoding.output_rules import forbid_specials, max_output_lengths
from nmt.model.interface import M, S, StepDecoder


@torch.inference_mode()
def greedy_search(model: StepDecoder[M, S], src: Tensor, src_lengths: Tensor, *,
                  alpha: float = 0.0, max_length_ratio: float = 2.0,
                  keep_attention: bool = True) -> list[list[Hypothesis]]:
    """The most probable next token at every step; one hypothesis per sentence.

    The same hypotheses as beam_search with beam_size 1 (tests/decoding/test_search.py holds the
    two to that), in a function of its own because it is the cheap path: one max per step and no
    candidates, finished pool or beam bookkeeping. The word reward and the coverage penalty
    change nothing here: they rank hypotheses, and there is only one."""
    batch, device = src.size(0), src.device
    memory = model.encode(src, src_lengths)
    state = model.init_state(memory)
    max_lengths = max_output_lengths(src_lengths, max_length_ratio).to(device)  # (B,)
    limit = int(max_lengths.max())
    out_tokens = torch.full((batch, limit), PAD_ID, dtype=torch.long, device=device)  # (B, L)
    out_steps = torch.zeros(batch, dtype=torch.long, device=device)  # (B,) steps incl. </s>
    out_log_probs = torch.zeros(batch, device=device)  # (B,)
    out_attention = None  # (B, L, S), made at the first step that has weights

    active = torch.arange(batch, device=device)  # (A,) sentences still decoding
    prev = torch.full((batch,), BOS_ID, dtype=torch.long, device=device)  # (A,)
    log_prob = torch.zeros(batch, device=device)  # (A,)
    for t in range(limit):
        log_probs, state, weights = model.decode_step(prev, state, memory)  # (A, V), (A, S)
        best, token = forbid_specials(log_probs, t).max(dim=1)  # (A,), (A,)
        log_prob = log_prob + best
        out_tokens[active, t] = token
        if keep_attention and weights is not None:
            if out_attention is None:
                out_attention = weights.new_zeros(batch, limit, src.size(1))  # (B, L, S)
            out_attention[active, t] = weights
        done = (token == EOS_ID) | (t + 1 >= max_lengths)  # (A,)
        if done.any():
            out_steps[active[done]] = t + 1
            out_log_probs[active[done]] = log_prob[done]
            if done.all():
                break
            keep = (~done).nonzero().squeeze(1)  # (A',)
            active, max_lengths = active[keep], max_lengths[keep]
            log_prob, token = log_prob[keep], token[keep]
            memory, state = memory.select(keep), state.select(keep)
        prev = token

    scores = (out_log_probs / length_penalty(out_steps.float(), alpha)).tolist()  # B floats
    tokens, steps = out_tokens.tolist(), out_steps.tolist()
    log_probs_list = out_log_probs.tolist()
    attention = None if out_attention is None else out_attention.float().cpu().numpy()
    lengths = src_lengths.tolist()
    results = []
    for i in range(batch):
        ended = steps[i] > 0 and tokens[i][steps[i] - 1] == EOS_ID
        n_tokens = steps[i] - 1 if ended else steps[i]
        weights = None if attention is None else attention[i, : steps[i], : lengths[i]].copy()
        results.append([Hypothesis(tokens[i][:n_tokens], scores[i], log_probs_list[i], ended, weights)])
    return results
