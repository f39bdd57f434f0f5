import logging
import zipfile

import pytest

from nmt.data.corpus import read_corpus
from nmt.errors import NMTError

GOOD = "Tom likes cats.\t汤姆喜欢猫。\tCC-BY #1 (a) & #2 (b)".encode()


def write(tmp_path, data: bytes):
    path = tmp_path / "corpus.tsv"
    path.write_bytes(data)
    return path


def good_lines(n):
    return [f"Line {i}.\t第{i}行。\tcredit".encode() for i in range(n)]


def test_reads_pairs_without_the_attribution_column(tmp_path):
    corpus = read_corpus(write(tmp_path, GOOD + b"\n" + "Hi.\t你好\n".encode()))
    assert [tuple(p) for p in corpus.pairs] == [("汤姆喜欢猫。", "Tom likes cats.", 1),
                                                ("你好", "Hi.", 2)]
    assert corpus.lines_read == 2 and corpus.skipped == {}


def test_byte_order_mark_and_crlf_are_not_part_of_the_text(tmp_path):
    corpus = read_corpus(write(tmp_path, b"\xef\xbb\xbf" + GOOD + b"\r\n" + GOOD + b"\r\n"))
    assert [p.en for p in corpus.pairs] == ["Tom likes cats.", "Tom likes cats."]
    assert all(p.zh == "汤姆喜欢猫。" for p in corpus.pairs)


def test_no_final_line_end_still_reads_the_last_line(tmp_path):
    corpus = read_corpus(write(tmp_path, GOOD + b"\n" + GOOD))
    assert len(corpus.pairs) == 2 and corpus.lines_read == 2


@pytest.mark.parametrize("bad, reason", [
    (b"", "blank_line"),
    (b"   \t ", "blank_line"),
    (b"only one column", "wrong_columns"),
    (b"a\tb\tc\td", "wrong_columns"),
    ("\t你好\tcredit".encode(), "empty_side"),
    (b"Hello.\t  \tcredit", "empty_side"),
    (b"Bad \xff\xfe bytes.\t\xe4\xbd\xa0\tcredit", "invalid_utf8"),
    (b"Cut \xe4\xbd.\t\xe4\xbd\xa0\tcredit", "invalid_utf8"),  # a character cut in half
])
def test_each_kind_of_bad_line_is_skipped_and_counted(tmp_path, caplog, bad, reason):
    lines = good_lines(5)
    lines.insert(2, bad)
    with caplog.at_level(logging.WARNING):
        corpus = read_corpus(write(tmp_path, b"\n".join(lines) + b"\n"))
    assert corpus.skipped == {reason: 1}
    assert corpus.lines_read == 6
    assert [p.line for p in corpus.pairs] == [1, 2, 4, 5, 6]
    if reason != "blank_line":  # blank lines are counted, not reported one by one
        assert "corpus.tsv:3: skipped" in caplog.text


def test_only_the_first_few_bad_lines_are_reported(tmp_path, caplog):
    lines = good_lines(30) + [b"bad line %d" % i for i in range(10)]
    with caplog.at_level(logging.WARNING):
        corpus = read_corpus(write(tmp_path, b"\n".join(lines)))
    assert corpus.skipped == {"wrong_columns": 10}
    assert caplog.text.count(": skipped, ") == 5
    assert "skipped 10 of 40 lines" in caplog.text


def test_missing_file_says_how_to_get_it(tmp_path):
    with pytest.raises(NMTError, match=r"nope\.tsv: corpus file not found; run `make data`"):
        read_corpus(tmp_path / "nope.tsv")


@pytest.mark.parametrize("data", [b"", b"\xef\xbb\xbf", b"\n\n  \n"])
def test_empty_file_is_an_error(tmp_path, data):
    with pytest.raises(NMTError, match=r"corpus\.tsv: .*(empty|only blank lines)"):
        read_corpus(write(tmp_path, data))


def test_binary_file_is_an_error(tmp_path):
    with pytest.raises(NMTError, match=r"corpus\.tsv: this is a binary file"):
        read_corpus(write(tmp_path, bytes(range(256)) * 10))


def test_zip_archive_says_to_extract_it(tmp_path):
    path = tmp_path / "cmn-eng.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cmn.txt", GOOD.decode())
    with pytest.raises(NMTError, match=r"zip archive.*extract cmn\.txt"):
        read_corpus(path)


def test_mostly_bad_file_is_an_error_naming_the_counts(tmp_path):
    lines = good_lines(4) + [b"no tabs here"] * 5
    with pytest.raises(NMTError, match=r"corpus\.tsv: 5 of 9 lines are unusable \(5 with expected "
                                       r"2 or 3 tab-separated columns\).*`make data`"):
        read_corpus(write(tmp_path, b"\n".join(lines)))


def test_half_bad_file_is_still_read(tmp_path):
    lines = good_lines(5) + [b"no tabs here"] * 5
    assert len(read_corpus(write(tmp_path, b"\n".join(lines))).pairs) == 5


def test_latin1_file_is_mostly_bad(tmp_path):
    text = "Café.\tcafé, s'il vous plaît\tcredit\n" * 10
    with pytest.raises(NMTError, match="10 of 10 lines are unusable"):
        read_corpus(write(tmp_path, text.encode("latin-1")))


def test_swapped_columns_are_an_error(tmp_path):
    lines = ["你好。\tHello.\tcredit".encode()] * 5
    with pytest.raises(NMTError, match="columns look swapped"):
        read_corpus(write(tmp_path, b"\n".join(lines)))


def test_tiny_corpus_fixture_reads_cleanly(tiny_corpus):
    corpus = read_corpus(tiny_corpus)
    assert len(corpus.pairs) == 200 and corpus.skipped == {}
    assert corpus.pairs[0].en == "Tom likes cats."  # the BOM is gone
