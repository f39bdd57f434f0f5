"""Binary, memory-mapped token arrays: the ids load_examples gives, a damaged file is a clear
error, and the training pairs over them (max_length, empty pairs, right_to_left)."""

from __future__ import annotations

import numpy as np
import pytest

from nmt.data.batching import load_examples
from nmt.data.token_arrays import (PairArrays, TokenArrays, ids_path, offsets_path,
                                   write_token_arrays)
from nmt.data.vocab import SPECIALS, Vocab
from nmt.errors import NMTError

SRC = "我 喜欢 猫\n\n他 想要 一 本 很 长 的 书\n你 好\r\n狗\n"
TGT = "i like cats\nempty source\nhe wants a very long book\nhello\n\n"


def _vocab(*texts: str, extra: int = 0) -> Vocab:
    tokens = sorted({t for text in texts for t in text.split()} - {"好"})  # "好" stays unknown
    return Vocab(SPECIALS + [f"filler{i}" for i in range(extra)] + tokens)  # extra: ids > 65535


def _write(tmp_path, text: str, name: str, vocab: Vocab) -> tuple[dict, object]:
    (tmp_path / f"train.tok.{name}").write_text(text, encoding="utf-8")
    prefix = tmp_path / f"train.{name}"  # PreparedData.arrays("train", name)
    return write_token_arrays(tmp_path / f"train.tok.{name}", vocab, prefix), prefix


@pytest.mark.parametrize("extra, dtype", [(0, "uint16"), (70_000, "uint32")])
def test_the_arrays_hold_the_ids_load_examples_gives(tmp_path, extra, dtype):
    vocab = _vocab(SRC, TGT, extra=extra)
    src_info, src_prefix = _write(tmp_path, SRC, "zh", vocab)
    tgt_info, tgt_prefix = _write(tmp_path, TGT, "en", vocab)
    assert src_info == {"sentences": 5, "tokens": 14, "dtype": dtype}
    assert tgt_info["sentences"] == 5 and tgt_info["dtype"] == dtype
    assert np.load(ids_path(src_prefix)).dtype == np.dtype(dtype)
    assert np.load(offsets_path(src_prefix)).tolist()[:2] == [0, 3]

    src, tgt = TokenArrays.open(src_prefix), TokenArrays.open(tgt_prefix)
    assert len(src) == 5 and src.lengths.tolist() == [3, 0, 8, 2, 1]
    examples = load_examples(tmp_path / "train.tok.zh", tmp_path / "train.tok.en", vocab, vocab)
    pairs = PairArrays(src, tgt)
    assert [(ex.src, ex.tgt) for ex in pairs] == [(ex.src, ex.tgt) for ex in examples]
    assert max(max(ex.src) for ex in examples) > 65535 or not extra
    assert pairs.index.tolist() == [0, 2, 3]  # the empty pairs are dropped
    assert not list(tmp_path.glob(".*.tmp"))  # no temporary file left behind


def test_max_length_and_right_to_left(tmp_path):
    vocab = _vocab(SRC, TGT)
    src, tgt = (TokenArrays.open(_write(tmp_path, text, name, vocab)[1])
                for text, name in ((SRC, "zh"), (TGT, "en")))
    examples = load_examples(tmp_path / "train.tok.zh", tmp_path / "train.tok.en", vocab, vocab,
                             max_length=3)
    short = PairArrays(src, tgt, max_length=3)
    assert [(ex.src, ex.tgt) for ex in short] == [(ex.src, ex.tgt) for ex in examples]
    assert short.index.tolist() == [0, 3]
    assert short.src_lengths.tolist() == [3, 2] and short.tgt_lengths.tolist() == [3, 1]
    backward = PairArrays(src, tgt, max_length=3, target_order="right_to_left")
    assert [ex.tgt for ex in backward] == [ex.tgt[::-1] for ex in short]
    assert backward[0].src == short[0].src and len(backward) == 2
    with pytest.raises(IndexError):
        backward[2]


def test_missing_or_damaged_arrays_are_clear_errors(tmp_path):
    vocab = _vocab(SRC, TGT)
    _, prefix = _write(tmp_path, SRC, "zh", vocab)
    with pytest.raises(NMTError, match=r"train\.xx\.ids\.npy: not found.*make prepare"):
        TokenArrays.open(tmp_path / "train.xx")

    ids = np.load(ids_path(prefix))
    np.save(ids_path(prefix), ids[:-2])  # a whole .npy, but fewer ids than the offsets say
    with pytest.raises(NMTError, match=r"train\.zh\.offsets\.npy: does not match train\.zh\.ids"):
        TokenArrays.open(prefix)

    data = ids_path(prefix).read_bytes()
    ids_path(prefix).write_bytes(data[: len(data) - 10])  # cut short: the header says more
    with pytest.raises(NMTError, match=r"train\.zh\.ids\.npy: damaged"):
        TokenArrays.open(prefix)

    _, tgt_prefix = _write(tmp_path, TGT + "one more\n", "en", vocab)
    _write(tmp_path, SRC, "zh", vocab)
    with pytest.raises(NMTError, match="holds 5 sentences but .* holds 6"):
        PairArrays(TokenArrays.open(prefix), TokenArrays.open(tgt_prefix))
