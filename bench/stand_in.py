"""When a bench may measure random-init models instead of a run's, and the one that stands in for
a trained decoder.

A bench measures what `make eval` (or `make align`) decodes with: the run's decoding plan
(nmt/decoding/plan.py). Only a run with no checkpoint at all (`make bench` before `make train`)
may be measured by a random stand-in of the config's size, and the bench says so. Any other
error of the plan (a damaged tuned file, a missing rescoring model, a corrupt checkpoint) stops
the bench with its message: a stand-in's figure would read as the run's.
"""

from __future__ import annotations

import sys

import torch

from nmt.config.schema import Config
from nmt.data.vocab import EOS_ID


def untrained(config: Config, checkpoint: str | None = None) -> bool:
    """Nothing named (no --checkpoint, no eval.ensemble), and no checkpoint file anywhere in
    runs/<name>/ (its members' folders included)."""
    named = checkpoint or config.eval.ensemble
    return not named and not any(config.run_dir.glob("**/checkpoints/*.pt"))


def say_stand_in(config: Config, what: str) -> None:
    """Tell the reader, on stderr, that `what` stands in for the run's models."""
    print(f"no trained checkpoint yet (nothing in {config.run_dir}/checkpoints/): measuring "
          f"{what}", file=sys.stderr)


class SteeredLength(torch.nn.Module):
    """A random model whose </s> gets likelier step by step around `ratio` x the source length.

    A fresh model's output distribution is nearly flat: it says </s> at once or never. This
    stand-in for a trained model costs exactly as much per step and stops at realistic lengths.
    """

    def __init__(self, model, ratio: float, slope: float = 1.0):
        super().__init__()
        self.model, self.config, self.ratio, self.slope, self.step = model, model.config, ratio, slope, 0

    def __getattr__(self, name: str):
        """What the search asks of a model besides its steps (target_order, attention_grid,
        ...) is the wrapped model's."""
        try:
            return super().__getattr__(name)  # its parameters and submodules: `model`
        except AttributeError:
            if name == "model":
                raise
            return getattr(super().__getattr__("model"), name)

    def encode(self, src, src_lengths):
        self.step = 0
        return self.model.encode(src, src_lengths)

    def init_state(self, memory):
        return self.model.init_state(memory)

    def decode_step(self, prev, state, memory):
        log_probs, state, weights = self.model.decode_step(prev, state, memory)  # (N, V)
        target = self.ratio * memory.mask.sum(dim=1)  # (N,) the length to end near
        log_probs[:, EOS_ID] += self.slope * (self.step - target)
        self.step += 1
        return log_probs.log_softmax(dim=-1), state, weights
