"""Token ids on disk as flat numpy arrays, memory-mapped: the training pairs without Python lists.

A prepared token file (one sentence a line) becomes two .npy files beside it:

    <prefix>.ids.npy      every sentence's ids, one after another (uint16, or uint32 when the
                          vocabulary holds more than 65,536 tokens)
    <prefix>.offsets.npy  int64, N + 1: sentence i is ids[offsets[i]:offsets[i + 1]]

Read with np.load(mmap_mode="r"), the ids are pages of the file, not objects of a process: every
process and rank of a machine shares one copy in the page cache, and a 10M-pair corpus costs a
few hundred MB once instead of gigabytes of lists per process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from nmt.data.batching import Example, in_model_order
from nmt.data.vocab import Vocab
from nmt.errors import NMTError
from nmt.io import atomic_write, count_lines, iter_lines

UINT16_TOKENS = 1 << 16  # ids 0 .. 65535 fit in uint16


def ids_path(prefix: Path) -> Path:
    return Path(prefix).with_name(Path(prefix).name + ".ids.npy")


def offsets_path(prefix: Path) -> Path:
    return Path(prefix).with_name(Path(prefix).name + ".offsets.npy")


def _token_lines(tokens_file: Path):
    """The lines' tokens as load_examples reads them (nmt.io's line rules, str.split)."""
    with open(tokens_file, "rb") as file:
        for line in iter_lines(file, str(tokens_file)):
            yield line.split()


def write_token_arrays(tokens_file: Path, vocab: Vocab, prefix: Path) -> dict:
    """Encode `tokens_file` with `vocab` into <prefix>.ids.npy and <prefix>.offsets.npy.

    Two streaming passes (count, then encode into a memory-mapped .npy), so memory stays at the
    offsets array whatever the corpus size. Each file is written under a temporary name and
    renamed; the offsets go last, and a reader checks that they end at the ids' length.
    """
    tokens_file, prefix = Path(tokens_file), Path(prefix)
    if not tokens_file.is_file():
        raise NMTError(f"{tokens_file}: token file not found; run `make prepare CONFIG=...`")
    offsets = np.zeros(count_lines(tokens_file) + 1, dtype=np.int64)  # (N + 1,)
    for i, tokens in enumerate(_token_lines(tokens_file)):
        offsets[i + 1] = offsets[i] + len(tokens)
    dtype = np.uint16 if len(vocab) <= UINT16_TOKENS else np.uint32

    def write_ids(tmp: Path) -> None:
        ids = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=(int(offsets[-1]),))
        lines = 0
        for i, tokens in enumerate(_token_lines(tokens_file)):
            if i + 1 >= len(offsets) or offsets[i + 1] - offsets[i] != len(tokens):
                raise NMTError(f"{tokens_file}: changed while it was being encoded; prepare again")
            ids[offsets[i]:offsets[i + 1]] = vocab.encode(tokens)
            lines += 1
        if lines != len(offsets) - 1:
            raise NMTError(f"{tokens_file}: changed while it was being encoded; prepare again")
        ids.flush()
        del ids

    def write_offsets(tmp: Path) -> None:
        with open(tmp, "wb") as file:
            np.lib.format.write_array(file, offsets)

    atomic_write(ids_path(prefix), write_ids)
    atomic_write(offsets_path(prefix), write_offsets)
    return {"sentences": len(offsets) - 1, "tokens": int(offsets[-1]),
            "dtype": np.dtype(dtype).name}


def _load(path: Path, what: str) -> np.ndarray:
    if not path.is_file():
        raise NMTError(f"{path}: not found; the prepared data has no binary {what} (it predates "
                       f"them, or preparing stopped half-way): run `make prepare CONFIG=...`")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise NMTError(f"{path}: damaged ({error}); delete {path.parent} and run "
                       f"`make prepare CONFIG=...` again") from None
    if array.ndim != 1:
        raise NMTError(f"{path}: damaged (shape {array.shape}, expected a flat array); delete "
                       f"{path.parent} and run `make prepare CONFIG=...` again")
    return array


class TokenArrays:
    """The sentences of one prepared token file, read from its memory-mapped arrays."""

    def __init__(self, prefix: Path, ids: np.ndarray, offsets: np.ndarray):
        self.prefix, self._ids, self._offsets = Path(prefix), ids, offsets
        self.lengths = np.diff(offsets)  # (N,) tokens per sentence

    @classmethod
    def open(cls, prefix: Path) -> "TokenArrays":
        ids = _load(ids_path(prefix), "token ids")
        offsets = _load(offsets_path(prefix), "sentence offsets")
        path = offsets_path(prefix)
        arrays = None
        if offsets.dtype == np.int64 and len(offsets) and offsets[0] == 0 and offsets[-1] == len(ids):
            arrays = cls(prefix, ids, offsets)
        if arrays is None or np.any(arrays.lengths < 0):
            end = int(offsets[-1]) if len(offsets) else None
            raise NMTError(f"{path}: does not match {ids_path(prefix).name} (offsets end at {end}, "
                           f"the ids hold {len(ids)}): the prepared data is damaged; delete "
                           f"{path.parent} and run `make prepare CONFIG=...` again")
        return arrays

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def ids(self, i: int) -> list[int]:
        return self._ids[self._offsets[i]:self._offsets[i + 1]].tolist()


class PairArrays:
    """Training pairs over two TokenArrays: those within `max_length` (empty ones dropped, as
    load_examples drops them), targets in the model's order on access.

    `index` maps a position in this dataset (what batches and Batch.indices hold) to the pair's
    line in the prepared files; the lengths are numpy arrays, so make_batches sorts without
    touching a single pair.
    """

    def __init__(self, src: TokenArrays, tgt: TokenArrays, max_length: int | None = None,
                 target_order: str = "left_to_right", reverse: bool = False):
        if len(src) != len(tgt):  # a truncated or damaged file: never pair them silently
            raise NMTError(f"{offsets_path(src.prefix)} holds {len(src)} sentences but "
                           f"{offsets_path(tgt.prefix)} holds {len(tgt)}; the prepared data is "
                           f"damaged: delete {src.prefix.parent} and prepare again")
        self.src, self.tgt, self.target_order = src, tgt, target_order
        self.reverse = reverse  # src is the English side, tgt the Chinese (model.direction)
        kept = (src.lengths > 0) & (tgt.lengths > 0)
        if max_length:
            kept &= (src.lengths <= max_length) & (tgt.lengths <= max_length)
        self.index = np.flatnonzero(kept)  # (M,) prepared line of each kept pair
        self.src_lengths = src.lengths[self.index]  # (M,)
        self.tgt_lengths = tgt.lengths[self.index]  # (M,)

    def __len__(self) -> int:
        return len(self.index)

    def __getitem__(self, i: int) -> Example:
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        line = int(self.index[i])
        return Example(self.src.ids(line), in_model_order(self.tgt.ids(line), self.target_order))

    def __iter__(self):
        return (self[i] for i in range(len(self)))
