"""Where training stands (saved in every checkpoint), and the signals that end it cleanly."""

from __future__ import annotations

import logging
import signal
from dataclasses import dataclass

from nmt.config.schema import TrainingConfig
from nmt.errors import NMTError

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """Where training stands; saved in every checkpoint."""

    step: int = 0
    epoch: int = 0
    batch_in_epoch: int = 0  # batches of this epoch already trained on
    best_score: float | None = None  # dev BLEU, or minus dev loss
    bad_validations: int = 0  # validations since the best one
    skipped_batches: int = 0  # batches whose loss was not finite
    target_tokens: int = 0
    train_seconds: float = 0.0
    # CPU time of this process (all its threads), validation included: on a shared machine it
    # says what a run cost where wall-clock time also counts the other jobs.
    cpu_seconds: float = 0.0
    # wall-clock seconds of dev validations (inside train_seconds): what they cost the budget
    validation_seconds: float = 0.0

    def record_validation(self, score: float) -> bool:
        """Count a validation's score toward early stopping; True when it is a new best."""
        improved = self.best_score is None or score > self.best_score
        self.best_score = score if improved else self.best_score
        self.bad_validations = 0 if improved else self.bad_validations + 1
        return improved

    def skip_non_finite(self, training: TrainingConfig, loss: float) -> None:
        """A NaN or infinite loss never reaches the weights or a checkpoint: skip the batch, or
        stop with an error (training.on_nan), and stop anyway after too many skips."""
        at = f"step {self.step + 1} (epoch {self.epoch}, batch {self.batch_in_epoch})"
        if training.on_nan == "stop":
            raise NMTError(f"the loss became {loss} at {at}; nothing was saved from this step. "
                           f"Lower training.lr or training.clip_norm, or set training.on_nan=skip")
        self.skipped_batches += 1
        log.warning("non-finite loss %s at %s: batch skipped (%d so far)", loss, at,
                    self.skipped_batches)
        if self.skipped_batches > training.max_skipped_batches:
            raise NMTError(f"{self.skipped_batches} batches had a non-finite loss (more than "
                           f"training.max_skipped_batches); lower training.lr and train again")


class StopSignal:
    """SIGINT/SIGTERM ask the loop to save and leave at the next step boundary."""

    def __init__(self):
        self.received: int | None = None
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame):
        self.received = signum

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
