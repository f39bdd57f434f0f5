"""Beam search on several CPU cores at once: one worker process per core, each searching whole
batches (search.workers).

A search step is many small operations, and a second thread inside each of them keeps the second
core only partly busy; two processes of one thread, each searching its own batches, decode
faster (`bench/bench_decode.py` and `bench/bench_ensemble.py` measure it). Marian decodes on CPUs
the same way
(--cpu-threads: one worker per thread, each with its own batches).

The workers are forked from the process that loaded the model: they start in milliseconds and
share its weights (copy-on-write: nothing is copied while they only read them). Each worker takes
the next batch when it is done with one, so long and short batches even out. Only on Linux (fork)
and on the CPU; elsewhere, or for a single batch, the batches are searched here, one by one.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch

from nmt.runtime import pin_to_cores, usable_cores

# What the workers search, set before they are forked (a fork inherits it; nothing is pickled).
_search_batch: Callable[[list[int]], Any] | None = None
_batches: list[list[int]] = []


def worker_count(workers: int, batches: int, device: torch.device) -> int:
    """How many worker processes to fork: search.workers (0: one per thread this process may
    use), at most one per batch; 1 (search here) on a GPU, outside Linux or for one batch."""
    if device.type != "cpu" or not sys.platform.startswith("linux"):
        return 1
    return max(1, min(workers or torch.get_num_threads(), batches))


Found = TypeVar("Found")


def search_batches(search_batch: Callable[[list[int]], Found], batches: list[list[int]],
                   workers: int) -> Iterator[tuple[list[int], Found]]:
    """(batch, search_batch(batch)) for every batch, in the order they finish.

    With workers > 1 they are searched in that many forked processes, this process's threads
    shared among them (threads ÷ workers each, on cores of their own)."""
    global _search_batch, _batches
    if workers <= 1:
        for batch in batches:
            yield batch, search_batch(batch)
        return
    threads = max(1, torch.get_num_threads() // workers)
    cores = usable_cores()
    context = multiprocessing.get_context("fork")
    cores_of_worker = context.SimpleQueue()
    for k in range(workers):
        mine = cores[k * threads:(k + 1) * threads]
        cores_of_worker.put(mine if len(mine) == threads else [])  # too few cores: not pinned
    _search_batch, _batches = search_batch, batches
    try:
        with context.Pool(workers, _start_worker, (cores_of_worker, threads)) as pool:
            for index, found in pool.imap_unordered(_search, range(len(batches))):
                yield batches[index], found
    finally:
        _search_batch, _batches = None, []


def _start_worker(cores_of_worker, threads: int) -> None:
    torch.set_num_threads(threads)
    pin_to_cores(cores_of_worker.get())


def _search(index: int) -> tuple[int, Any]:
    return index, _search_batch(_batches[index])  # type: ignore[misc]
