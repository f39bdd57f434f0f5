"""Search workers (search.workers): forked processes, each on its own batches."""

from __future__ import annotations

import os

import pytest
import torch

from nmt.decoding.workers import search_batches, worker_count
from nmt.errors import NMTError


def test_batches_are_searched_in_other_processes_and_each_once():
    batches = [[0, 1], [2], [3, 4, 5], [6]]
    found = dict((tuple(batch), pids) for batch, pids in
                 search_batches(lambda batch: [os.getpid()] * len(batch), batches, workers=2))
    assert sorted(found) == sorted(tuple(batch) for batch in batches)
    pids = {pid for pids in found.values() for pid in pids}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_one_worker_searches_here():
    found = list(search_batches(lambda batch: [os.getpid()] * len(batch), [[0], [1]], workers=1))
    assert found == [([0], [os.getpid()]), ([1], [os.getpid()])]


def test_a_worker_error_reaches_the_caller():
    def fail(batch):
        raise NMTError(f"batch {batch} failed")

    with pytest.raises(NMTError, match=r"batch \[\d\] failed"):
        list(search_batches(fail, [[0], [1]], workers=2))


def test_worker_count():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        cpu = torch.device("cpu")
        assert worker_count(0, batches=10, device=cpu) == 2  # one per thread
        assert worker_count(0, batches=1, device=cpu) == 1  # one batch: nothing to share
        assert worker_count(4, batches=3, device=cpu) == 3  # never more workers than batches
        assert worker_count(1, batches=10, device=cpu) == 1
        assert worker_count(2, batches=10, device=torch.device("meta")) == 1  # not a CPU
    finally:
        torch.set_num_threads(threads)
