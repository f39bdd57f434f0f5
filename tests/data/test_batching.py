"""Token-sized, length-bucketed batches."""

import random

import torch

from nmt.data.batching import Example, collate, load_examples, make_batches
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab


def _examples(n=500, seed=0):
    rng = random.Random(seed)
    # Lengths skewed like real sentences: many short, a long tail.
    return [Example([5] * rng.randint(1, 25), [6] * min(40, int(rng.expovariate(1 / 8)) + 1))
            for _ in range(n)]


def test_every_example_once_per_epoch_and_within_the_token_budget():
    examples = _examples()
    batches = make_batches(examples, batch_tokens=200, seed=1, epoch=0)
    flat = sorted(i for batch in batches for i in batch)
    assert flat == list(range(len(examples)))
    for batch in batches:
        longest = max(len(examples[i].tgt) + 1 for i in batch)
        assert longest * len(batch) <= 200 or len(batch) == 1


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
