"""Requests that arrive together are decoded together: one batch through the model.

Eight clients asking at once would otherwise take turns with a batch of one sentence each; a
beam search of eight sentences costs far less than eight of one (`bench/bench_serve.py`
measures it). No extra thread: every request puts its lines in the waiting list and queues for
the model; whoever gets the model decodes everything waiting with the same beam and n-best, its
own lines first, and hands each request its share.
Search results do not depend on the batch (tests/decoding/test_search.py), so an answer is the
same whoever it was decoded with.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from nmt.decoding.translator import Translation, Translator


@dataclass(eq=False)  # a job is itself: two alike are still two
class _Job:
    lines: list[str]
    key: tuple[int, int]  # (beam, n-best): only jobs with the same key share a search
    results: list[Translation] | None = None
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


class Batcher:
    """`translate(lines, beam, nbest)` as the Translator's, for many threads at once."""

    def __init__(self, translator: Translator, max_lines: int = 64):
        self.translator = translator
        self.max_lines = max_lines  # a batch stops growing here (a long wait for nobody)
        self._waiting: list[_Job] = []
        self._waiting_lock = threading.Lock()
        self._model = threading.Lock()  # one search at a time: it has the cores to itself

    def translate(self, lines: list[str], beam: int, nbest: int) -> list[Translation]:
        job = _Job(lines, (beam, nbest))
        with self._waiting_lock:
            self._waiting.append(job)
        with self._model:
            if not job.done.is_set():  # nobody took it along while this thread waited
                self._decode(self._take(job))
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.results  # type: ignore[return-value]

    def _take(self, job: _Job) -> list[_Job]:
        """`job` and the waiting jobs with its key, up to max_lines lines; they leave the list."""
        with self._waiting_lock:
            batch, lines = [job], len(job.lines)
            for other in self._waiting:
                if other is not job and other.key == job.key and lines + len(other.lines) <= self.max_lines:
                    batch.append(other)
                    lines += len(other.lines)
            self._waiting = [other for other in self._waiting if other not in batch]
        return batch

    def _decode(self, batch: list[_Job]) -> None:
        beam, nbest = batch[0].key
        try:
            found = self.translator.translate([line for job in batch for line in job.lines],
                                              beam_size=beam, nbest=nbest)
            start = 0
            for job in batch:
                job.results = found[start:start + len(job.lines)]
                start += len(job.lines)
        except BaseException as error:  # every request of the batch hears of it, not only this one
            for job in batch:
                job.error = error
            raise
        finally:
            for job in batch:
                job.done.set()
