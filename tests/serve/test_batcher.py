"""One decoding thread: requests that wait for the model together are decoded as one batch, each
getting its own lines; the queue is bounded, a request has a deadline, and closing finishes what
was taken."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from nmt.config.serve_schema import ServeConfig
from nmt.serve.batcher import Batcher, Overloaded


class FakeTranslator:
    """Echoes each line with its beam and n-best; the first call waits for `release` so that
    the other requests pile up behind it. Records the thread each search ran in."""

    def __init__(self, fail_on: str | None = None):
        self.calls: list[tuple[list[str], int, int]] = []
        self.threads: set[str] = set()
        self.release, self.started, self.fail_on = threading.Event(), threading.Event(), fail_on

    def translate(self, lines, beam_size, nbest):
        self.threads.add(threading.current_thread().name)
        if not self.calls and not self.started.is_set():
            self.started.set()
            self.release.wait(10)
        self.calls.append((list(lines), beam_size, nbest))
        if self.fail_on in lines:
            raise RuntimeError("the model failed")
        return [f"{line}|{beam_size}|{nbest}" for line in lines]


def ask(batcher: Batcher, request):
    try:
        return batcher.translate(*request)
    except (RuntimeError, Overloaded) as error:
        return error


def ask_together(batcher: Batcher, requests: list[tuple[list[str], int, int]]):
    """The first request takes the model (and blocks in it); the rest wait; then all go."""
    with ThreadPoolExecutor(len(requests)) as pool:
        first = pool.submit(ask, batcher, requests[0])
        assert batcher.translator.started.wait(10)
        rest = [pool.submit(ask, batcher, request) for request in requests[1:]]
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
    assert batcher.translator.threads == {"decode"}  # the model runs in one thread only


def test_different_beams_never_share_a_search_and_a_batch_stops_at_batch_lines():
    batcher = Batcher(FakeTranslator(), ServeConfig(batch_lines=3))
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


def test_a_full_queue_refuses_with_a_retry_time_but_a_job_alone_is_always_taken():
    batcher = Batcher(FakeTranslator(), ServeConfig(queue_lines=2))
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(ask, batcher, (["a"], 5, 1))  # taken: the thread holds it
        assert batcher.translator.started.wait(10)
        second = pool.submit(ask, batcher, (["b", "c"], 5, 1))  # waits: 2 lines of 2
        while len(batcher._waiting) < 1:
            time.sleep(0.001)
        refused = ask(batcher, (["d"], 5, 1))
        assert isinstance(refused, Overloaded) and refused.retry_after >= 1
        assert "serve.queue_lines = 2" in str(refused)
        batcher.translator.release.set()
        assert first.result() == ["a|5|1"] and second.result() == ["b|5|1", "c|5|1"]
    assert batcher.translate(["x", "y", "z"], 5, 1) == ["x|5|1", "y|5|1", "z|5|1"]  # alone: taken


def test_a_request_past_its_deadline_gets_503_and_is_never_decoded():
    batcher = Batcher(FakeTranslator(), ServeConfig(deadline_seconds=0.3))
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(ask, batcher, (["a"], 5, 1))
        assert batcher.translator.started.wait(10)
        late = ask(batcher, (["late"], 5, 1))  # while "a" holds the thread: no answer comes
        assert isinstance(late, Overloaded) and "serve.deadline_seconds" in str(late)
        batcher.translator.release.set()
        first.result()
    assert batcher.translate(["next"], 5, 1) == ["next|5|1"]
    assert ["late"] not in [lines for lines, _, _ in batcher.translator.calls]


def test_closing_finishes_what_was_taken_then_refuses():
    batcher = Batcher(FakeTranslator())
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(ask, batcher, (["a"], 5, 1))
        assert batcher.translator.started.wait(10)
        second = pool.submit(ask, batcher, (["b"], 5, 1))
        while len(batcher._waiting) < 1:
            time.sleep(0.001)
        closing = threading.Thread(target=batcher.close)
        closing.start()
        batcher.translator.release.set()
        closing.join(10)
        assert first.result() == ["a|5|1"] and second.result() == ["b|5|1"]
    with pytest.raises(Overloaded, match="shutting down"):
        batcher.translate(["c"], 5, 1)


def test_drain_waits_for_what_is_held_and_the_thread_goes_on():
    batcher = Batcher(FakeTranslator())
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(ask, batcher, (["a"], 5, 1))
        assert batcher.translator.started.wait(10)
        drained = threading.Thread(target=batcher.drain)
        drained.start()
        drained.join(0.2)
        assert drained.is_alive()  # "a" is still being decoded
        batcher.translator.release.set()
        drained.join(10)
        assert not drained.is_alive() and first.result() == ["a|5|1"]
    assert batcher.translate(["b"], 5, 1) == ["b|5|1"]


class HeldWork:
    """`Work` whose search waits for `release`; records the answers it makes."""

    def __init__(self):
        self.searching, self.release, self.answered = threading.Event(), threading.Event(), []

    def search(self, lines, key):
        self.searching.set()
        self.release.wait(10)
        return [line.upper() for line in lines]

    def answer(self, found, key):
        self.answered.append(found)
        return [f"{line}|{key[2]}" for line in found]


def test_a_request_past_its_deadline_during_its_search_gets_503_and_its_answer_is_never_made():
    """The deadline covers the answer, not only the search: links and layers are not made for
    a request that has had its 503."""
    work = HeldWork()
    batcher = Batcher(None, ServeConfig(deadline_seconds=0.3), work)
    with ThreadPoolExecutor(1) as pool:
        late = pool.submit(ask, batcher, (["late"], 5, 1))
        assert work.searching.wait(10)
        assert isinstance(late.result(10), Overloaded)  # while its search still runs
    work.release.set()
    batcher.drain(10)
    assert work.answered == []
    assert batcher.translate(["next"], 5, 1, "links") == ["NEXT|links"]


def test_an_awaited_answer_and_a_full_queue_refused_in_the_event_loop():
    batcher = Batcher(FakeTranslator(), ServeConfig(queue_lines=1))

    async def three():
        first = asyncio.ensure_future(batcher.answer(["a"], 5, 1))
        while not batcher.translator.started.is_set():  # the loop goes on while it decodes
            await asyncio.sleep(0.001)
        second = asyncio.ensure_future(batcher.answer(["b"], 5, 1))
        while len(batcher._waiting) < 1:
            await asyncio.sleep(0.001)
        with pytest.raises(Overloaded, match="serve.queue_lines = 1"):
            await batcher.answer(["c"], 5, 1)
        batcher.translator.release.set()
        return await first, await second

    assert asyncio.run(three()) == (["a|5|1"], ["b|5|1"])
