"""One decoding thread for the whole server: request threads hand it their lines and wait.

Requests that arrive together are decoded together: the thread takes the oldest waiting job and
every other one with the same beam and n-best, up to `batch_lines` lines, and searches them as
one batch (a beam search of eight sentences costs far less than eight of one; search results do
not depend on the batch, tests/decoding/test_search.py). The model only ever runs in this one
thread: the allocator's per-thread caches then stay one, and memory stays flat under a long
soak, where eight request threads taking turns at the model grew without bound
(bench/bench_serve.py --soak measures it).

Overload is answered, not queued for ever:
- a request whose lines would make the queue longer than `queue_lines` is refused at once
  (`Overloaded`: 503 with Retry-After), unless the queue is empty;
- a request not answered within `deadline_seconds` gets 503 instead of a late answer, and the
  thread skips it if it has not started it.
`drain()` waits until the thread has answered what it holds (uvicorn, stopping on SIGTERM,
takes no new request and waits for those it has); `close()` also stops the thread.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from nmt.config.serve_schema import ServeConfig
from nmt.decoding.translator import Translation, Translator
from nmt.errors import NMTError


class Overloaded(NMTError):
    """The server is too busy to answer in time: a 503, with the seconds to wait first."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(eq=False)  # a job is itself: two alike are still two
class _Job:
    lines: list[str]
    key: tuple[int, int]  # (beam, n-best): only jobs with the same key share a search
    deadline: float  # time.monotonic() past which the answer is no use
    results: list[Translation] | None = None
    error: BaseException | None = None
    abandoned: bool = False  # its request stopped waiting
    done: threading.Event = field(default_factory=threading.Event)


class Batcher:
    """`translate(lines, beam, nbest)` as the Translator's, for many threads at once."""

    def __init__(self, translator: Translator, limits: ServeConfig | None = None):
        self.translator = translator
        self.limits = limits or ServeConfig()
        self._waiting: deque[_Job] = deque()
        self._waiting_lines = 0
        self._changed = threading.Condition()
        self._closing = False
        self._busy = False  # the thread is decoding a batch
        self._seconds_per_line = 0.05  # a running estimate, for Retry-After
        self._thread = threading.Thread(target=self._run, name="decode", daemon=True)
        self._thread.start()

    def translate(self, lines: list[str], beam: int, nbest: int) -> list[Translation]:
        job = _Job(lines, (beam, nbest), time.monotonic() + self.limits.deadline_seconds)
        self._enqueue(job)
        if not job.done.wait(self.limits.deadline_seconds):
            job.abandoned = True  # the thread skips it, or drops its answer
            raise Overloaded(f"no translation within {self.limits.deadline_seconds:g} s "
                             f"(serve.deadline_seconds): the server is busy; try again",
                             self.retry_after())
        if job.error is not None:
            raise job.error
        assert job.results is not None
        return job.results

    def retry_after(self) -> int:
        """Seconds until the lines waiting now are likely decoded."""
        return max(1, math.ceil(self._waiting_lines * self._seconds_per_line))

    def drain(self, timeout: float | None = None) -> None:
        """Wait until nothing waits and nothing is being decoded."""
        with self._changed:
            self._changed.wait_for(lambda: not self._waiting and not self._busy, timeout)

    def close(self, timeout: float | None = None) -> None:
        """Finish the jobs taken, refuse new ones, stop the thread."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout)

    def _enqueue(self, job: _Job) -> None:
        with self._changed:
            if self._closing:
                raise Overloaded("the server is shutting down", 1)
            waiting = self._waiting_lines + len(job.lines)
            if self._waiting and waiting > self.limits.queue_lines:
                raise Overloaded(f"{self._waiting_lines} lines wait already; with {len(job.lines)} "
                                 f"more the queue would pass serve.queue_lines = "
                                 f"{self.limits.queue_lines}: try again", self.retry_after())
            self._waiting.append(job)
            self._waiting_lines = waiting
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._waiting and not self._closing:
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
        now = time.monotonic()
        for job in [j for j in self._waiting if j.abandoned or j.deadline < now]:
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
        if not batch:
            return
        beam, nbest = batch[0].key
        lines = [line for job in batch for line in job.lines]
        start = time.monotonic()
        try:
            found = self.translator.translate(lines, beam_size=beam, nbest=nbest)
            for job in batch:
                job.results, found = found[:len(job.lines)], found[len(job.lines):]
        except Exception as error:  # every request of the batch hears of it; the thread goes on
            for job in batch:
                job.error = error
        finally:
            for job in batch:
                job.done.set()
        seconds = (time.monotonic() - start) / max(1, len(lines))
        self._seconds_per_line = 0.8 * self._seconds_per_line + 0.2 * seconds
