"""An exponential moving average of the weights: the model validation scores and translation uses.

After every optimizer step, averaged = decay · averaged + (1 − decay) · weights. Adam's weights
hop around the optimum from one batch to the next; their running mean sits closer to it, with a
lower dev loss and a steadier dev score (Polyak averaging; Marian's exponential smoothing,
fairseq's EMA; its runs are rows of docs/results.md). Training never reads it.

The average is updated every `every` steps with decay**every: nearly the same average, at a
quarter of the cost when every=4 (an update reads and writes every weight).
The decay warms up as min(decay, (1 + n) / (10 + n)) after n updates, so the average forgets the
random initial weights within the first few hundred steps instead of thousands.
"""

from __future__ import annotations

from typing import Generic, TypeVar, cast

import torch
from torch import Tensor, nn
from torch.optim.swa_utils import AveragedModel


ModelT = TypeVar("ModelT", bound=nn.Module)


class ExponentialMovingAverage(Generic[ModelT]):
    def __init__(self, model: ModelT, decay: float, every: int = 4):
        self.decay, self.every = decay ** every, every
        self.averaged = AveragedModel(model, multi_avg_fn=self._average)

    @property
    def model(self) -> ModelT:
        # AveragedModel keeps a deep copy of `model`, of its class; its stubs say only Module.
        return cast(ModelT, self.averaged.module)

    def _average(self, averaged: tuple[Tensor, ...] | list[Tensor],
                 current: tuple[Tensor, ...] | list[Tensor], updates: Tensor | int) -> None:
        n = int(updates)  # AveragedModel passes its n_averaged, a one-element long tensor
        decay = min(self.decay, (1 + n) / (10 + n))
        torch._foreach_lerp_(averaged, current, 1 - decay)  # averaged += (1−decay)(current − averaged)

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        """Called after every optimizer step; averages at every `every`-th."""
        if step % self.every == 0:
            self.averaged.update_parameters(model)

    @property
    def updates(self) -> int:
        return int(self.averaged.n_averaged)

    def weights(self) -> dict[str, Tensor]:
        """The averaged weights under the plain model's names: what a checkpoint stores."""
        return self.model.state_dict()

    def load(self, weights: dict[str, Tensor], updates: int) -> None:
        """Continue an average a checkpoint saved."""
        self.model.load_state_dict(weights)
        self.averaged.n_averaged.fill_(updates)
