import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from nmt.data.split import components, split_pairs
from nmt.errors import NMTError


@st.composite
def corpora(draw):
    """Random pairs over `k` sentences a side; a small `k` makes shared sentences and chains."""
    k = draw(st.integers(1, 300))
    index = st.integers(0, k - 1)
    pairs = draw(st.lists(st.tuples(index, index), min_size=20, max_size=150))
    return [(f"句子{z}。", f"Sentence {e}.") for z, e in pairs]


def check_leak_free(pairs, splits):
    indices = sorted(i for part in splits.values() for i in part)
    assert indices == list(range(len(pairs)))  # every pair exactly once
    for side in (0, 1):
        owner = {}
        for name, part in splits.items():
            for i in part:
                sentence = pairs[i][side].casefold()
                assert owner.setdefault(sentence, name) == name, f"{sentence!r} leaks"


@settings(max_examples=300, deadline=None)
@given(pairs=corpora(), dev_size=st.integers(1, 10), test_size=st.integers(1, 10),
       seed=st.integers(0, 2**32))
def test_split_never_puts_a_sentence_on_two_sides(pairs, dev_size, test_size, seed):
    try:
        splits = split_pairs(pairs, dev_size, test_size, seed)
    except NMTError as error:
        # Allowed only when the corpus is too small or too few groups are small enough to fit.
        small = len(pairs) < 2 * (dev_size + test_size)
        sizes = [len(g) for g in components(pairs)]
        assert (small or sum(n <= dev_size for n in sizes) <= 1
                or sum(n <= test_size for n in sizes) == 0), error
        event("too small or too linked")
        return
    event("split")
    check_leak_free(pairs, splits)
    assert 0 < len(splits["dev"]) <= dev_size and 0 < len(splits["test"]) <= test_size
    assert splits == split_pairs(pairs, dev_size, test_size, seed)  # the seed decides


def test_pairs_linked_through_a_chain_stay_together():
    # a–b share Chinese, b–c share English: a, b and c are one group though a and c share nothing.
    pairs = [("甲。", "A."), ("甲。", "B."), ("乙。", "B."), ("丙。", "C.")]
    assert sorted(map(sorted, components(pairs))) == [[0, 1, 2], [3]]


def test_english_case_differences_count_as_the_same_sentence():
    assert len(components([("甲。", "Tom is here."), ("乙。", "tom is here.")])) == 1


def test_sizes_are_met_with_many_small_groups():
    pairs = [(f"句{i}", f"S{i}") for i in range(1000)] + [("共", f"T{i}") for i in range(200)]
    splits = split_pairs(pairs, 100, 150, seed=1)
    check_leak_free(pairs, splits)
    assert (len(splits["dev"]), len(splits["test"]), len(splits["train"])) == (100, 150, 950)
    assert set(range(1000, 1200)) <= set(splits["train"])  # the 200-pair group never fits


def test_seeds_give_different_splits():
    pairs = [(f"句{i}", f"S{i}") for i in range(200)]
    assert split_pairs(pairs, 20, 20, 1)["test"] != split_pairs(pairs, 20, 20, 2)["test"]


def test_too_small_corpus_is_an_error_naming_the_keys():
    pairs = [(f"句{i}", f"S{i}") for i in range(30)]
    with pytest.raises(NMTError, match=r"only 30 pairs .*data\.dev_size=10 and data\.test_size=10"):
        split_pairs(pairs, 10, 10, seed=0)


def test_one_big_group_leaves_nothing_for_test():
    pairs = [("同一句。", f"S{i}") for i in range(100)]
    with pytest.raises(NMTError, match=r"no test pairs.*data\.test_size=5"):
        split_pairs(pairs, 5, 5, seed=0)
