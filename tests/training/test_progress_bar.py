"""The training progress: a bar on a terminal, whole log lines in a file (a member's train.log)."""

from __future__ import annotations

import io
import logging

from tqdm import tqdm

from nmt.training import progress_bar as module
from nmt.training.progress_bar import LoggedProgress, progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_bar_and_a_file_gets_log_lines_without_carriage_returns(caplog,
                                                                                   monkeypatch):
    bar = progress_bar(0, 10, enabled=True, stream=Terminal())
    assert isinstance(bar, tqdm)
    bar.close()
    monkeypatch.setattr(module, "LOG_EVERY_SECONDS", 0.0)  # a line at every step
    log_file = io.StringIO()
    with caplog.at_level(logging.INFO, logger=module.__name__):
        bar = progress_bar(3, 10, enabled=True, stream=log_file)
        bar.set_postfix(loss="2.345", tok_s="1500")
        bar.update(1)
        bar.close()
    assert isinstance(bar, LoggedProgress) and log_file.getvalue() == ""  # no bar drawn
    assert caplog.messages == ["train: step 4/10, loss=2.345, tok_s=1500"]


def test_log_lines_come_at_most_once_an_interval_and_not_from_other_ranks(caplog):
    with caplog.at_level(logging.INFO, logger=module.__name__):
        quiet = LoggedProgress(0, None, enabled=True, interval=3600)
        for _ in range(100):
            quiet.update(1)
        hidden = LoggedProgress(0, None, enabled=False, interval=0)
        hidden.update(1)
        shown = LoggedProgress(0, None, enabled=True, interval=0)
        shown.update(2)
    assert quiet.step == 100 and caplog.messages == ["train: step 2"]
