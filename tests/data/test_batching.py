"""Token-sized, length-bucketed batches."""

import random
from pathlib import Path

import numpy as np
import pytest
import torch

from nmt.data.batching import Example, collate, lengths_of, load_examples, make_batches
from nmt.data.token_arrays import PairArrays, TokenArrays
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab


def _examples(n=500, seed=0):
    rng = random.Random(seed)
    # Lengths skewed like real sentences: many short, a long tail.
    return [Example([5] * rng.randint(1, 25), [6] * min(40, int(rng.expovariate(1 / 8)) + 1))
            for _ in range(n)]


def _arrays(examples: list[Example]) -> PairArrays:
    """The same pairs as memory-mapped training data would hold them (no files needed)."""
    def side(seqs):
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in seqs])]).astype(np.int64)
        return TokenArrays(Path("train"), np.array([i for s in seqs for i in s], np.uint16), offsets)
    return PairArrays(side([ex.src for ex in examples]), side([ex.tgt for ex in examples]))


@pytest.mark.parametrize("as_arrays", [False, True])
def test_every_example_once_per_epoch_and_within_the_token_budget(as_arrays):
    examples = _arrays(_examples()) if as_arrays else _examples()
    for epoch, batch_tokens in ((0, 200), (1, 200), (2, 37), (3, 5)):
        batches = make_batches(examples, batch_tokens=batch_tokens, seed=1, epoch=epoch)
        flat = sorted(i for batch in batches for i in batch)
        assert flat == list(range(len(examples)))
        for batch in batches:
            longest = max(len(examples[i].tgt) + 1 for i in batch)
            assert longest * len(batch) <= batch_tokens or len(batch) == 1
        assert len(batches) < len(examples) or batch_tokens == 5


def test_batches_are_cut_greedily_in_length_order():
    examples = [Example([5], [6] * n) for n in (1, 1, 1, 2, 2, 3)]  # padded targets 2 2 2 3 3 4
    batches = make_batches(examples, batch_tokens=8, seed=0, epoch=0, shuffle=False)
    assert batches == [[0, 1, 2], [3, 4], [5]]  # 3 × 2 = 6 (+ a 3 would be 4 × 3 = 12), 2 × 3, 1 × 4


def test_the_list_and_the_arrays_give_the_same_batches():
    examples = _examples()
    arrays = _arrays(examples)
    assert [(ex.src, ex.tgt) for ex in arrays] == [(ex.src, ex.tgt) for ex in examples]
    assert [a.tolist() for a in lengths_of(arrays)] == [a.tolist() for a in lengths_of(examples)]
    assert make_batches(arrays, 200, seed=1, epoch=4) == make_batches(examples, 200, seed=1, epoch=4)
    assert (make_batches(arrays, 200, seed=1, epoch=0, shuffle=False)
            == make_batches(examples, 200, seed=1, epoch=0, shuffle=False))


def test_no_batch_is_mostly_padding():
    examples = _examples()
    for batch in make_batches(examples, batch_tokens=300, seed=1, epoch=3):
        tensors = collate(examples, batch)
        assert (tensors.tgt_out != PAD_ID).float().mean() > 0.5


def test_batches_are_a_function_of_seed_and_epoch():
    examples = _examples()
    assert make_batches(examples, 200, seed=1, epoch=2) == make_batches(examples, 200, seed=1, epoch=2)
    assert make_batches(examples, 200, seed=1, epoch=2) != make_batches(examples, 200, seed=1, epoch=3)
    assert make_batches(examples, 200, seed=1, epoch=2) != make_batches(examples, 200, seed=2, epoch=2)


def test_without_shuffle_the_order_is_by_length_then_index_whatever_the_seed():
    examples = _examples()
    fixed = make_batches(examples, 200, seed=0, epoch=0, shuffle=False)
    assert fixed == make_batches(examples, 200, seed=5, epoch=7, shuffle=False)
    order = [i for batch in fixed for i in batch]
    assert order == sorted(range(len(examples)),
                           key=lambda i: (len(examples[i].tgt), len(examples[i].src), i))


def test_collate_pads_and_shifts_the_target():
    batch = collate([Example([7, 8, 9], [4, 5]), Example([10], [6, 7, 8])], [0, 1])
    assert batch.src.tolist() == [[7, 8, 9], [10, PAD_ID, PAD_ID]]
    assert batch.src_lengths.tolist() == [3, 1]
    assert batch.tgt_in.tolist() == [[BOS_ID, 4, 5, PAD_ID], [BOS_ID, 6, 7, 8]]
    assert batch.tgt_out.tolist() == [[4, 5, EOS_ID, PAD_ID], [6, 7, 8, EOS_ID]]
    assert batch.target_tokens == 7
    assert batch.src.dtype == torch.long


def test_load_examples_drops_long_pairs(tmp_path):
    (tmp_path / "s").write_text("a b\na b c d\n", encoding="utf-8")
    (tmp_path / "t").write_text("x\ny z\n", encoding="utf-8")
    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "a", "b", "x"])
    examples = load_examples(tmp_path / "s", tmp_path / "t", vocab, vocab, max_length=3)
    assert [(ex.src, ex.tgt) for ex in examples] == [([4, 5], [6])]
