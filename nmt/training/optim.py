"""Optimizer and learning-rate schedule, as `training.*` in the config names them."""

from __future__ import annotations

import torch
from torch import nn

from nmt.config.schema import TrainingConfig


def build_optimizer(model: nn.Module, config: TrainingConfig) -> torch.optim.Optimizer:
    kind = torch.optim.AdamW if config.optimizer == "adamw" else torch.optim.Adam
    beta1, beta2 = config.adam_betas  # two numbers: the schema checks it
    # The fused kernel updates all parameters in one pass instead of a Python loop over them,
    # which on a small CPU costs far more than the update itself.
    return kind(model.parameters(), lr=config.lr, betas=(beta1, beta2),
                weight_decay=config.weight_decay, fused=True)


class Schedule:
    """Sets the learning rate after each step and after each validation.

    constant      lr throughout
    plateau       multiply by plateau_factor after plateau_patience validations without a new best
    warmup_decay  linear warm-up over warmup_steps, then decay with 1/sqrt(step)
    """

    def __init__(self, optimizer: torch.optim.Optimizer, config: TrainingConfig):
        self.optimizer, self.config = optimizer, config
        self.lr = config.lr
        self.bad_validations = 0

    def before_step(self, step: int) -> None:
        """Set the rate for step `step` (counted from 1)."""
        if self.config.schedule == "warmup_decay":
            warmup = max(self.config.warmup_steps, 1)
            self.lr = self.config.lr * min(step / warmup, (warmup / step) ** 0.5)
            self._apply()

    def after_validation(self, improved: bool) -> None:
        if self.config.schedule != "plateau":
            return
        self.bad_validations = 0 if improved else self.bad_validations + 1
        if self.bad_validations > self.config.plateau_patience:
            self.lr = max(self.lr * self.config.plateau_factor, self.config.min_lr)
            self.bad_validations = 0
            self._apply()

    def _apply(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr

    def state_dict(self) -> dict:
        return {"lr": self.lr, "bad_validations": self.bad_validations}

    def load_state_dict(self, state: dict) -> None:
        self.lr, self.bad_validations = state["lr"], state["bad_validations"]
        self._apply()
