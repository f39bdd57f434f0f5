"""Fuzzed input through translate and the corpus reader: one output per "\\n"-line, no traceback.

Random Unicode with control characters, line and paragraph separators, lone CRs, byte-order
marks, very long lines and bytes that are not UTF-8 go through the same functions the script
uses (`iter_lines` + `translate_stream`), from a pipe and from a file, and once through
scripts/translate.py itself.
"""

from __future__ import annotations

import io
import json
import logging
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO
from nmt.config.loader import load_config
from nmt.data.corpus import read_corpus
from nmt.errors import NMTError
from nmt.decoding.streaming import translate_stream
from nmt.decoding.translator import Translator
from nmt.io import iter_lines

SEPARATORS = ["\r", "\r\n", "\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
              "\u2029", "\ufeff", "\x00", "\x07", "\t", "$\\frac$"]
WORDS = ["汤姆", "喜欢", "猫", "。", "Tom", "3", "😀", "學習", "\u200b", " "]
PIECES = st.one_of(st.sampled_from(SEPARATORS), st.sampled_from(WORDS), st.text(max_size=6))
NASTY_TEXT = st.lists(PIECES, max_size=25).map("".join)
NASTY_BYTES = st.one_of(
    NASTY_TEXT.map(str.encode),
    st.lists(st.one_of(NASTY_TEXT.map(str.encode), st.binary(max_size=8),
                       st.sampled_from([b"\xff", b"\xe4\xbd", b"\xef\xbb\xbf", b"\r", b"\n"])),
             max_size=12).map(b"".join),
)
# A lone CR between two words (old Mac files, scraped text): one line, not two.
LONE_CR = "再见\r谢谢\n你好\n".encode()
LONG = ("猫" * 5000 + "\n" + "a" * 20000).encode()
FUZZ = settings(max_examples=30, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def expected_count(data: bytes) -> int:
    return data.count(b"\n") + (bool(data) and not data.endswith(b"\n"))


@pytest.fixture(scope="module")
def smoke_checkpoint(tmp_path_factory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("hostile")
    config = load_config(REPO / "configs" / "smoke.yaml", [f"runs_dir={folder / 'runs'}"])
    return write_random_checkpoint(config.run_dir / "checkpoints" / "best.pt", config), config


@pytest.fixture(scope="module")
def translator(smoke_checkpoint) -> Translator:
    path, config = smoke_checkpoint
    # Greedy and unknown-word replacement: fast, and source tokens can reach the output.
    search = replace(config.search, beam_size=1, replace_unk=True, batch_size=4)
    return Translator.from_checkpoint(path, search=search, device="cpu")


def translate_bytes(translator: Translator, data: bytes, tmp_path: Path) -> tuple[str, str]:
    """Output text via the pipe path and via the file path."""
    piped = io.StringIO(newline="\n")
    translate_stream(translator, iter_lines(io.BytesIO(data), "<stdin>"), piped, 4)
    path = tmp_path / "input.zh"
    path.write_bytes(data)
    from_file = io.StringIO(newline="\n")
    with path.open("rb") as file:
        translate_stream(translator, iter_lines(file, str(path)), from_file, 4)
    return piped.getvalue(), from_file.getvalue()


@FUZZ
@given(data=NASTY_BYTES)
@example(data=LONE_CR)
@example(data=LONG)
@example(data=b"\xef\xbb\xbf")
@example(data="a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\r\n".encode())
def test_translate_gives_one_line_per_input_line(translator, tmp_path, data):
    with single_thread():
        piped, from_file = translate_bytes(translator, data, tmp_path)
    assert piped == from_file
    lines = piped.split("\n")
    assert lines[-1] == "" and len(lines) - 1 == expected_count(data)
    # No output line holds anything another tool could take for a line end.
    assert len(piped.splitlines()) == expected_count(data)


def test_lone_carriage_return_is_one_line_and_bad_bytes_are_named(translator, tmp_path, caplog):
    data = LONE_CR + b"bad \xff byte\n\xe4\xbd\n"
    with caplog.at_level(logging.WARNING, logger="nmt.io"), single_thread():
        piped, _ = translate_bytes(translator, data, tmp_path)
    assert piped.count("\n") == 4
    assert "<stdin>: 2 lines are not valid UTF-8 (lines 3, 4)" in caplog.text
    assert f"{tmp_path / 'input.zh'}: 2 lines are not valid UTF-8" in caplog.text


@FUZZ
@given(lines=st.lists(NASTY_BYTES, max_size=20), good=st.integers(0, 20))
@example(lines=[b"Tom.\t\xe6\xb1\xa4\xe5\xa7\x86\r\xe7\x8c\xab\tc", "Hi.\t你\u2028好".encode()],
         good=0)
def test_corpus_reader_skips_and_counts_bad_lines(tmp_path, lines, good):
    """Good pairs mixed with junk: every line is a pair or a counted skip, or one NMTError."""
    body = [f"Line {i}.\t第{i}行。\tcredit".encode() for i in range(good)] + lines
    data = b"\n".join(body) + b"\n"
    path = tmp_path / "corpus.tsv"
    path.write_bytes(data)
    try:
        corpus = read_corpus(path)
    except NMTError as error:
        assert str(error).startswith(str(path))
        return
    assert corpus.lines_read == expected_count(data.removeprefix(b"\xef\xbb\xbf"))
    assert len(corpus.pairs) + sum(corpus.skipped.values()) == corpus.lines_read
    assert [p.line for p in corpus.pairs] == sorted({p.line for p in corpus.pairs})
    for pair in corpus.pairs:
        assert pair.zh.strip() and pair.en.strip() and "\n" not in pair.zh + pair.en
    assert corpus.pairs[:good] == [(f"第{i}行。", f"Line {i}.", i + 1) for i in range(good)]


@pytest.mark.e2e
def test_script_with_a_nasty_file_and_a_nasty_pipe(smoke_checkpoint, tmp_path):
    """3,000 random bytes (and a lone CR, U+2028, a BOM) through scripts/translate.py: the
    --input file and stdin give the same number of lines, with a warning and no traceback."""
    _, config = smoke_checkpoint
    noise = random.Random(14).randbytes(3000)
    data = b"\xef\xbb\xbf" + LONE_CR + "a\u2028b\x0cc\x85\n".encode() + noise
    source, output = tmp_path / "nasty.zh", tmp_path / "out.en"
    source.write_bytes(data)
    script = [sys.executable, str(REPO / "scripts" / "translate.py"),
              str(REPO / "configs" / "smoke.yaml"), f"runs_dir={config.runs_dir}",
              "training.device=cpu", "search.beam_size=1", "search.max_length_ratio=0.2"]
    done = subprocess.run(script + ["--input", str(source), "--output", str(output)],
                          capture_output=True, timeout=120, check=False)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr and "not valid UTF-8" in stderr and "nasty.zh" in stderr
    assert output.read_bytes().count(b"\n") == expected_count(data)
    piped = subprocess.run(script, input=data, capture_output=True, timeout=120, check=False)
    assert piped.returncode == 0, piped.stderr.decode("utf-8", "replace")
    assert piped.stdout == output.read_bytes()
    assert b"<stdin>: " in piped.stderr and b"Traceback" not in piped.stderr


@pytest.mark.e2e
def test_attention_files_of_lines_with_dollar_signs(smoke_checkpoint, tmp_path):
    """Matplotlib read `$...$` in a title or label as a formula and raised on a bad one."""
    path, config = smoke_checkpoint
    translator = Translator.from_checkpoint(path, search=replace(config.search, beam_size=1),
                                            device="cpu", keep_attention=True)
    lines = ["汤姆 $\\foo$ 喜欢猫\n", "$x^$ 猫\r\n"]
    with single_thread():
        translate_stream(translator, lines, io.StringIO(), 4, attention_dir=tmp_path)
    assert json.loads((tmp_path / "0001.json").read_text(encoding="utf-8"))["source"] == lines[0][:-1]
    assert (tmp_path / "0002.png").stat().st_size > 0
