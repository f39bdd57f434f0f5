"""One decoding thread for a run: requests hand it their lines and wait for the answer.

Requests that arrive together are decoded together: the thread takes the oldest waiting job and
every other one with the same key (beam, n-best, and what else it asks for), up to `batch_lines`
lines, and searches them as one batch (a beam search of eight sentences costs far less than
eight of one; search results do not depend on the batch, tests/decoding/test_search.py); then
it makes each request's answer from its share (`Work.answer`: for the server, the links and
attention it asked for, nmt/serve/answers.py). The model only ever runs in this one thread: the
allocator's per-thread caches then stay one, and memory stays flat under a long soak, where
eight request threads taking turns at the model grew without bound (bench/soak_serve.py
measures it).

Overload is answered, not queued for ever:
- a request whose lines would make the queue longer than `queue_lines` is refused at once
  (`Overloaded`: 503 with Retry-After), unless the queue is empty;
- a request not answered within `deadline_seconds` gets 503 instead of a late answer, and the
  thread skips it if it has not started it, or its answer's making if only its search is done.
`translate` waits in the calling thread; `answer` is awaited in an event loop (the app's async
routes: no thread of a pool waits for the model). `drain()` waits until the thread has answered
what it holds (uvicorn, stopping on SIGTERM, takes no new request and waits for those it has);
`close()` also stops the thread.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol

from nmt.config.serve_schema import ServeConfig
from nmt.errors import NMTError

Key = tuple[int, int, Hashable]  # (beam, n-best, what else is asked): jobs that share a search


class Overloaded(NMTError):
    """The server is too busy to answer in time: a 503, with the seconds to wait first."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class Work(Protocol):
    """What the decoding thread does with a batch: one search of all its lines, then each
    job's answer from its share of what was found."""

    def search(self, lines: list[str], key: Any) -> list: ...

    def answer(self, found: list, key: Any) -> list: ...


class SearchOnly:
    """The translator's Translations, as they are: `Work` with nothing asked beyond them."""

    def __init__(self, translator):
        self.translator = translator

    def search(self, lines: list[str], key: Key) -> list:
        return self.translator.translate(lines, beam_size=key[0], nbest=key[1])

    def answer(self, found: list, key: Key) -> list:
        return found


@dataclass(eq=False)  # a job is itself: two alike are still two
class _Job:
    lines: list[str]
    key: Key  # only jobs with the same key share a search
    deadline: float  # time.monotonic() past which the answer is no use
    results: list | None = None
    error: BaseException | None = None
    abandoned: bool = False  # its request stopped waiting
    done: threading.Event = field(default_factory=threading.Event)
    on_done: Callable[[], None] | None = None  # also told, from the decoding thread

    def finish(self) -> None:
        self.done.set()
        if self.on_done is not None:
            self.on_done()

    def wanted(self) -> bool:
        return not self.abandoned and time.monotonic() <= self.deadline


class Batcher:
    """`translate(lines, beam, nbest)` as the Translator's, for many threads at once (and
    `answer`, the same awaited); `work` (default: the translator's Translations as they are)
    says what the thread makes of each batch."""

    def __init__(self, translator, limits: ServeConfig | None = None, work: Work | None = None):
        self.translator = translator
        self.limits = limits or ServeConfig()
        self.work = work or SearchOnly(translator)
        self._waiting: deque[_Job] = deque()
        self._waiting_lines = 0
        self._changed = threading.Condition()
        self._closing: str | None = None  # why new jobs are refused
        self._busy = False  # the thread is decoding a batch
        self._seconds_per_line = 0.05  # a running estimate, for Retry-After
        self._thread = threading.Thread(target=self._run, name="decode", daemon=True)
        self._thread.start()

    def translate(self, lines: list[str], beam: int, nbest: int, asked: Hashable = None) -> list:
        """Each line's answer, waiting in this thread; Overloaded past the deadline."""
        job = self._enqueue(self._job(lines, (beam, nbest, asked)))
        if not job.done.wait(self.limits.deadline_seconds):
            raise self._late(job)
        return self._outcome(job)

    async def answer(self, lines: list[str], beam: int, nbest: int, asked: Hashable = None) -> list:
        """`translate`, awaited: the event loop goes on serving while the thread decodes, and
        a full queue is refused at once."""
        loop = asyncio.get_running_loop()
        ready = loop.create_future()
        job = self._job(lines, (beam, nbest, asked))
        job.on_done = lambda: _settle(loop, ready)
        self._enqueue(job)
        try:
            await asyncio.wait_for(ready, self.limits.deadline_seconds)
        except TimeoutError:
            raise self._late(job) from None
        except asyncio.CancelledError:  # the client went away: nobody wants the answer
            job.abandoned = True
            raise
        return self._outcome(job)

    def retry_after(self) -> int:
        """Seconds until the lines waiting now are likely decoded."""
        return max(1, math.ceil(self._waiting_lines * self._seconds_per_line))

    def drain(self, timeout: float | None = None) -> None:
        """Wait until nothing waits and nothing is being decoded."""
        with self._changed:
            self._changed.wait_for(lambda: not self._waiting and not self._busy, timeout)

    def close(self, timeout: float | None = None, reason: str = "the server is shutting down") -> None:
        """Finish the jobs taken and those waiting, refuse new ones (Overloaded: `reason`), stop
        the thread; wait at most `timeout` seconds for it (0: not at all)."""
        with self._changed:
            self._closing = reason
            self._changed.notify_all()
        self._thread.join(timeout)

    def _job(self, lines: list[str], key: Key) -> _Job:
        return _Job(lines, key, time.monotonic() + self.limits.deadline_seconds)

    def _late(self, job: _Job) -> Overloaded:
        job.abandoned = True  # the thread skips it, or drops its answer
        return Overloaded(f"no translation within {self.limits.deadline_seconds:g} s "
                          f"(serve.deadline_seconds): the server is busy; try again",
                          self.retry_after())

    @staticmethod
    def _outcome(job: _Job) -> list:
        if job.error is not None:
            raise job.error
        assert job.results is not None
        return job.results

    def _enqueue(self, job: _Job) -> _Job:
        with self._changed:
            if self._closing is not None:
                raise Overloaded(f"{self._closing}: try again", 1)
            waiting = self._waiting_lines + len(job.lines)
            if self._waiting and waiting > self.limits.queue_lines:
                raise Overloaded(f"{self._waiting_lines} lines wait already; with {len(job.lines)} "
                                 f"more the queue would pass serve.queue_lines = "
                                 f"{self.limits.queue_lines}: try again", self.retry_after())
            self._waiting.append(job)
            self._waiting_lines = waiting
            self._changed.notify()
        return job

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and self._closing is None:
                    self._changed.wait()
                if not self._waiting:
                    return  # closing, and nothing left
                batch = self._take()
                self._busy = True
            self._decode(batch)
            with self._changed:
                self._busy = False
                self._changed.notify_all()

    def _take(self) -> list[_Job]:
        """The oldest job still wanted and the waiting jobs with its key, up to batch_lines
        lines; they leave the queue (the caller holds the lock). Jobs past their deadline or
        abandoned leave it unanswered: their requests have been told."""
        for job in [j for j in self._waiting if not j.wanted()]:
            self._remove(job)
        if not self._waiting:
            return []
        first = self._waiting[0]
        batch, lines = [first], len(first.lines)
        for other in list(self._waiting)[1:]:
            if other.key == first.key and lines + len(other.lines) <= self.limits.batch_lines:
                batch.append(other)
                lines += len(other.lines)
        for job in batch:
            self._remove(job)
        return batch

    def _remove(self, job: _Job) -> None:
        self._waiting.remove(job)
        self._waiting_lines -= len(job.lines)

    def _decode(self, batch: list[_Job]) -> None:
        """One search for the batch, then each job's answer, told as soon as it is made; an
        answer is made only while its request still waits (past its deadline it has had its
        503)."""
        if not batch:
            return
        lines = [line for job in batch for line in job.lines]
        start = time.monotonic()
        found: list = []
        failed: Exception | None = None
        try:
            found = self.work.search(lines, batch[0].key)
        except Exception as error:  # every request of the batch hears of it; the thread goes on
            failed = error
        for job in batch:
            share, found = found[:len(job.lines)], found[len(job.lines):]
            try:
                if failed is not None:
                    job.error = failed
                elif not job.wanted():
                    job.error = self._late(job)
                else:
                    job.results = self.work.answer(share, job.key)
            except Exception as error:  # this request hears of it; the others get their answers
                job.error = error
            finally:
                job.finish()
        seconds = (time.monotonic() - start) / max(1, len(lines))
        self._seconds_per_line = 0.8 * self._seconds_per_line + 0.2 * seconds


def _settle(loop: asyncio.AbstractEventLoop, ready: asyncio.Future) -> None:
    """Wake the coroutine awaiting `ready` (from the decoding thread); nothing if its loop has
    closed."""
    def wake() -> None:
        if not ready.done():  # not given up on (wait_for cancels it at the deadline)
            ready.set_result(None)
    try:
        loop.call_soon_threadsafe(wake)
    except RuntimeError:  # the loop is closed: nobody awaits any more
        pass
