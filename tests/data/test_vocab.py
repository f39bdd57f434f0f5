import numpy as np
import pytest

from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, UNK, UNK_ID, Vocab
from nmt.errors import NMTError

SENTENCES = [["b", "a", "c"], ["a", "b"], ["a", "d"], ["c", "e"]]  # a:3, b:2, c:2, d:1, e:1


def test_specials_first_then_frequency_then_alphabetical():
    vocab = Vocab.build(SENTENCES, min_freq=1, max_size=100)
    assert vocab.itos == ["<pad>", "<unk>", "<s>", "</s>", "a", "b", "c", "d", "e"]
    assert (vocab["<pad>"], vocab[UNK], vocab["<s>"], vocab["</s>"]) == (0, 1, 2, 3)


def test_min_freq_and_max_size_which_counts_the_specials():
    assert Vocab.build(SENTENCES, min_freq=2, max_size=100).itos[4:] == ["a", "b", "c"]
    assert Vocab.build(SENTENCES, min_freq=1, max_size=6).itos[4:] == ["a", "b"]
    assert len(Vocab.build(SENTENCES, min_freq=1, max_size=2)) == 4  # never fewer than the specials


def test_specials_in_the_text_do_not_get_a_second_id():
    vocab = Vocab.build([["<s>", "x", "</s>", "<unk>"]] * 3, min_freq=1, max_size=100)
    assert vocab.itos == ["<pad>", "<unk>", "<s>", "</s>", "x"]


def test_encode_maps_unknown_tokens_to_unk_and_adds_nothing():
    vocab = Vocab.build(SENTENCES, min_freq=1, max_size=100)
    assert vocab.encode(["a", "zzz", "e"]) == [4, UNK_ID, 8]
    assert vocab["zzz"] == UNK_ID and "zzz" not in vocab and "a" in vocab


def test_decode_skips_pad_and_bos_and_stops_at_eos():
    vocab = Vocab.build(SENTENCES, min_freq=1, max_size=100)
    ids = [BOS_ID, 4, PAD_ID, 5, UNK_ID, EOS_ID, 6, EOS_ID]
    assert vocab.decode(ids) == ["a", "b", "<unk>"]
    assert vocab.decode(np.array(ids)) == ["a", "b", "<unk>"]  # numpy / tensor elements work too


def test_save_load_round_trip(tmp_path):
    vocab = Vocab.build([["汤姆", "喜欢", "猫", "。"], ["汤姆", "。"]], min_freq=1, max_size=100)
    vocab.save(tmp_path / "vocab.zh")
    assert (tmp_path / "vocab.zh").read_text(encoding="utf-8").splitlines()[:5] == [
        "<pad>", "<unk>", "<s>", "</s>", "。"]
    assert Vocab.load(tmp_path / "vocab.zh").itos == vocab.itos
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temp file


def test_load_missing_file_names_the_path(tmp_path):
    with pytest.raises(NMTError, match=r"vocab\.en: vocabulary file not found"):
        Vocab.load(tmp_path / "vocab.en")


@pytest.mark.parametrize("text, message", [
    ("a\nb\n", r"vocab\.x: not a vocabulary file: the first lines must be <pad> <unk> <s> </s>"),
    ("", r"not a vocabulary file"),
    ("<pad>\n<unk>\n<s>\n</s>\nx\n\ny\n", r"vocab\.x:6: bad vocabulary file, the line is empty"),
    ("<pad>\n<unk>\n<s>\n</s>\nx\ny\nx\n", r"vocab\.x:7: .*repeats line 5"),
])
def test_load_bad_file_names_path_and_line(tmp_path, text, message):
    (tmp_path / "vocab.x").write_text(text, encoding="utf-8")
    with pytest.raises(NMTError, match=message):
        Vocab.load(tmp_path / "vocab.x")


def test_load_binary_file_is_an_error(tmp_path):
    (tmp_path / "vocab.x").write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(NMTError, match="not UTF-8"):
        Vocab.load(tmp_path / "vocab.x")


def test_tokens_with_whitespace_cannot_be_saved(tmp_path):
    with pytest.raises(ValueError, match="whitespace"):
        Vocab(["<pad>", "<unk>", "<s>", "</s>", "a b"]).save(tmp_path / "v")
