"""nmt.io: every reader splits at "\\n" only, counts a last unterminated line, names bad lines."""

from __future__ import annotations

import io
import logging

from hypothesis import given, settings
from hypothesis import strategies as st

from nmt.io import read_lines
from nmt.io import count_lines, decode_lines, iter_lines

# What Python's splitlines() or text-mode files treat as a line end, and "\n" itself.
SEPARATORS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "\r\n",
              "\n", "\ufeff"]
NASTY_TEXT = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(SEPARATORS)), max_size=30
                      ).map("".join)
NASTY_BYTES = st.one_of(
    st.binary(max_size=300),
    NASTY_TEXT.map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.lists(st.one_of(st.binary(max_size=6), NASTY_TEXT.map(str.encode)), max_size=12).map(b"".join),
)


def expected_count(data: bytes) -> int:
    return data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))


@settings(max_examples=50, deadline=None)
@given(data=NASTY_BYTES)
def test_every_reader_gives_one_line_per_newline(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("lines") / "input.txt"
    path.write_bytes(data)
    whole = decode_lines(data, "x")
    streamed = list(iter_lines(io.BytesIO(data), "<stdin>"))
    with path.open("rb") as file:
        from_file = list(iter_lines(file, str(path)))
    assert len(whole) == expected_count(data) == count_lines(path)
    assert whole == streamed == from_file == read_lines(path)
    assert not any("\n" in line for line in whole)


def test_separators_other_than_newline_stay_inside_the_line():
    text = "再见\r谢谢\n" + "a\u2028b\u2029c\x0bd\x0ce\x1cf\x85g\n" + "crlf\r\n" + "last"
    assert decode_lines(text.encode(), "x") == [
        "再见\r谢谢", "a\u2028b\u2029c\x0bd\x0ce\x1cf\x85g", "crlf", "last"]


def test_byte_order_mark_only_at_the_start_is_dropped():
    data = "\ufeff一\n\ufeff二\n".encode()
    assert decode_lines(data, "x") == ["一", "\ufeff二"]
    assert list(iter_lines(io.BytesIO(data), "x")) == ["一", "\ufeff二"]


def test_invalid_utf8_is_replaced_and_the_lines_are_named(caplog):
    lines = [b"ok", b"bad \xff", b"ok"] + [b"\xe4\xbd cut"] * 7
    with caplog.at_level(logging.WARNING, logger="nmt.io"):
        decoded = list(iter_lines(io.BytesIO(b"\n".join(lines)), "<stdin>"))
    assert len(decoded) == 10 and decoded[1] == "bad \ufffd" and decoded[0] == "ok"
    assert "<stdin>: 8 lines are not valid UTF-8 (lines 2, 4, 5, 6, 7 and 3 more)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="nmt.io"):
        assert decode_lines(b"a\n\xc0\n", "in.zh") == ["a", "\ufffd"]
    assert "in.zh: 1 line is not valid UTF-8 (line 2)" in caplog.text


def test_the_slow_path_for_bad_bytes_reads_like_the_fast_one():
    data = b"\xef\xbb\xbf\xef\xbb\xbfa\r\r\nb\xff\n"
    assert decode_lines(data, "x") == list(iter_lines(io.BytesIO(data), "x")) == ["\ufeffa\r",
                                                                                 "b\ufffd"]
