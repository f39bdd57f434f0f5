"""Requests that wait for the model together are decoded as one batch, each getting its own lines."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from nmt.serve.batcher import Batcher


class FakeTranslator:
    """Echoes each line with its beam and n-best; the first call waits for `release` so that
    the other requests pile up behind it."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[tuple[list[str], int, int]] = []
        self.release, self.fail_on = threading.Event(), fail_on

    def translate(self, lines, beam_size, nbest):
        if not self.calls:
            self.release.wait(10)
        self.calls.append((list(lines), beam_size, nbest))
        if self.fail_on in lines:
            raise RuntimeError("the model failed")
        return [f"{line}|{beam_size}|{nbest}" for line in lines]


def ask_together(batcher: Batcher, requests: list[tuple[list[str], int, int]]):
    """The first request takes the model (and blocks in it); the rest wait; then all go."""
    def ask(request):
        try:
            return batcher.translate(*request)
        except RuntimeError as error:
            return error

    with ThreadPoolExecutor(len(requests)) as pool:
        first = pool.submit(ask, requests[0])
        while not batcher.translator.calls and not batcher._model.locked():
            time.sleep(0.001)
        rest = [pool.submit(ask, request) for request in requests[1:]]
        deadline = time.monotonic() + 10
        while len(batcher._waiting) < len(requests) - 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        batcher.translator.release.set()
        return [first.result()] + [future.result() for future in rest]


def test_waiting_requests_share_one_search_and_each_gets_its_own_lines():
    batcher = Batcher(FakeTranslator())
    requests = [([f"s{i}a", f"s{i}b"] if i % 2 else [f"s{i}"], 5, 1) for i in range(8)]
    answers = ask_together(batcher, requests)
    assert answers == [[f"{line}|5|1" for line in lines] for lines, _, _ in requests]
    assert len(batcher.translator.calls) == 2  # the first alone, the seven that waited together


def test_different_beams_never_share_a_search_and_a_batch_stops_at_max_lines():
    batcher = Batcher(FakeTranslator(), max_lines=3)
    requests = [(["a"], 5, 1), (["b"], 5, 1), (["c"], 2, 1), (["d"], 5, 1), (["e", "f"], 5, 1)]
    answers = ask_together(batcher, requests)
    assert answers == [["a|5|1"], ["b|5|1"], ["c|2|1"], ["d|5|1"], ["e|5|1", "f|5|1"]]
    for lines, beam, _ in batcher.translator.calls:
        assert len(lines) <= 3 and (beam == 2) == (lines == ["c"])


def test_a_failed_search_fails_its_whole_batch_and_the_next_one_works():
    batcher = Batcher(FakeTranslator(fail_on="bad"))
    answers = ask_together(batcher, [(["ok"], 5, 1), (["bad"], 5, 1), (["fine"], 5, 1)])
    assert answers[0] == ["ok|5|1"]
    assert all(isinstance(answer, RuntimeError) for answer in answers[1:])
    assert batcher.translate(["again"], 5, 1) == ["again|5|1"]
    assert not batcher._waiting


def test_many_threads_each_get_exactly_their_answer():
    batcher = Batcher(FakeTranslator())
    batcher.translator.release.set()
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda i: batcher.translate([f"line {i}"], 1 + i % 3, 1), range(200)))
    assert answers == [[f"line {i}|{1 + i % 3}|1"] for i in range(200)]
