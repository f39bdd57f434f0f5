"""Segment and tokenize many sentence pairs, on several processes when that pays.

Segmentation is the slow step of prepare (~3 s of CPU for the whole corpus). Each worker process
loads jieba's dictionary once (~1 s, in parallel across workers), then takes chunks of pairs.
Small inputs run in this process: starting workers would cost more than it saves.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from tqdm import tqdm

from nmt.config.schema import DataConfig
from nmt.data.tokenize import ChineseSegmenter, EnglishTokenizer, make_tokenizers

CHUNK = 500  # pairs per task: small enough for a smooth progress bar, large enough to be cheap
PARALLEL_MIN = 3000  # below this many pairs, one process is faster than starting workers

_tokenizers: tuple[ChineseSegmenter, EnglishTokenizer] | None = None  # this process's own
_init_error: Exception | None = None


def tokenize_pairs(zh: Sequence[str], en: Sequence[str], data: DataConfig,
                   parallel_min: int = PARALLEL_MIN) -> tuple[list[str], list[str]]:
    """Space-joined tokens of each zh and en sentence, in input order.

    Uses `data.workers` processes (at most one per available core) for `parallel_min` pairs or more.
    """
    chunks = [(zh[i:i + CHUNK], en[i:i + CHUNK]) for i in range(0, len(zh), CHUNK)]
    parallel = len(zh) >= parallel_min
    zh_out: list[str] = []
    en_out: list[str] = []
    for zh_tokens, en_tokens in tokenize_chunks(iter(chunks), data, parallel, len(zh)):
        zh_out.extend(zh_tokens)
        en_out.extend(en_tokens)
    return zh_out, en_out


def tokenize_chunks(chunks: Iterator[tuple[Sequence[str], Sequence[str]]], data: DataConfig,
                    parallel: bool = True, total: int | None = None,
                    desc: str = "segment") -> Iterator[tuple[list[str], list[str]]]:
    """The tokens of each chunk of (zh, en) sentences, in order, as the chunks arrive: at most
    a few chunks per worker are in flight, so a corpus of any size streams through in constant
    memory (Pool.imap would read the whole input ahead)."""
    workers = min(data.workers, available_cpus()) if parallel else 1
    # The pool starts (forks) before tqdm starts its monitor thread.
    with _mapper(data, workers) as submit, \
            tqdm(total=total, desc=desc, unit=" pairs", disable=None) as bar:
        pending: deque = deque()
        for chunk in chunks:
            pending.append(submit(chunk))
            while len(pending) > 4 * workers:
                yield _done(pending.popleft(), bar)
        while pending:
            yield _done(pending.popleft(), bar)


def _done(result, bar) -> tuple[list[str], list[str]]:
    tokens = result.get() if hasattr(result, "get") else result
    bar.update(len(tokens[0]))
    return tokens


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))  # the cores this process may use, not all the host's
    except AttributeError:
        return os.cpu_count() or 1


@contextmanager
def _mapper(data: DataConfig, workers: int) -> Iterator[Callable]:
    """A function that tokenizes one chunk: here, or as a task of a pool of `workers`
    processes (it then returns the task's AsyncResult)."""
    if workers <= 1:
        _init(data)
        yield _tokenize_chunk
        return
    # fork shares the parent's imported modules (no re-import); spawn is the fallback elsewhere.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(workers, _init, (data,)) as pool:
        yield lambda chunk: pool.apply_async(_tokenize_chunk, (chunk,))


def _init(data: DataConfig) -> None:
    global _tokenizers, _init_error
    _tokenizers, _init_error = None, None
    try:
        _tokenizers = make_tokenizers(data)
        _tokenizers[0].warm_up()
    except Exception as error:  # raised from the first task: a failing initializer makes
        _init_error = error      # Pool restart the worker forever instead of reporting it


def _tokenize_chunk(chunk: tuple[Sequence[str], Sequence[str]]) -> tuple[list[str], list[str]]:
    if _init_error is not None:
        raise _init_error
    assert _tokenizers is not None  # _init ran in this process and either set them or failed
    segmenter, tokenizer = _tokenizers
    zh, en = chunk
    # Joined strings pickle back to the parent much faster than lists of tokens.
    return ([" ".join(segmenter.segment(s)) for s in zh],
            [" ".join(tokenizer.tokenize(s)) for s in en])
