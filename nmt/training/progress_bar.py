"""The training loop's progress on the console: a tqdm bar on a terminal; anywhere else (a
member's train.log, a batch job's output file) a log line at most once a minute instead, since
tqdm redraws its bar with carriage returns, which a file keeps as litter."""

from __future__ import annotations

import logging
import sys
import time
from typing import IO, Any

from tqdm import tqdm

log = logging.getLogger(__name__)

LOG_EVERY_SECONDS = 60.0


def progress_bar(initial: int, total: int | None, enabled: bool, stream: IO[str] | None = None):
    """What the loop calls update(1), set_postfix(...) and close() on: a tqdm bar when `stream`
    (stderr by default) is a terminal, else a LoggedProgress."""
    stream = sys.stderr if stream is None else stream
    if stream.isatty():
        return tqdm(desc="train", unit="step", initial=initial, total=total, disable=not enabled,
                    dynamic_ncols=True, mininterval=0.5, file=stream)
    return LoggedProgress(initial, total, enabled, LOG_EVERY_SECONDS)


class LoggedProgress:
    """tqdm's update, set_postfix and close, as a log line every `interval` seconds:
    `train: step 1200/3000, loss=2.345, tok_s=1500`."""

    def __init__(self, initial: int, total: int | None, enabled: bool,
                 interval: float = LOG_EVERY_SECONDS):
        self.step, self.total, self.enabled, self.interval = initial, total, enabled, interval
        self.postfix: dict[str, Any] = {}
        self.logged_at = time.monotonic()

    def update(self, steps: int = 1) -> None:
        self.step += steps
        if self.enabled and time.monotonic() - self.logged_at >= self.interval:
            self.logged_at = time.monotonic()
            of = "" if self.total is None else f"/{self.total}"
            shown = "".join(f", {key}={value}" for key, value in self.postfix.items())
            log.info("train: step %d%s%s", self.step, of, shown)

    def set_postfix(self, **values: Any) -> None:
        self.postfix = values

    def close(self) -> None:
        """Nothing to clear: every line is already whole."""
