"""Translating a stream of lines (a file, a pipe, a terminal) and writing attention files."""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

import numpy as np

from nmt.decoding.translator import Translation, Translator
from nmt.io import atomic_write, atomic_write_json

log = logging.getLogger(__name__)


def chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    """Lists of up to `size` lines, as soon as they can be read; a final "\\n" or "\\r\\n" is
    removed, nothing else (a lone "\\r" inside a line stays there: see nmt.io)."""
    iterator = iter(lines)
    while chunk := list(itertools.islice(iterator, size)):
        yield [_without_line_end(line) for line in chunk]


def _without_line_end(line: str) -> str:
    if not line.endswith("\n"):
        return line
    return line[:-2] if line.endswith("\r\n") else line[:-1]


def translate_stream(translator: Translator, lines: Iterable[str], out: TextIO, chunk_size: int,
                     attention_dir: Path | None = None, bar=None) -> int:
    """Translate `lines`, writing one output line per input line, flushed after every chunk.

    Read `lines` with `nmt.io.iter_lines`: a text-mode file would split at a lone "\\r".

    With `attention_dir`, each non-empty line's attention goes to NNNN.json and NNNN.png there
    (NNNN = the line number). Returns the number of lines.
    """
    number = 0
    for chunk in chunks(lines, chunk_size):
        translations = translator.translate(chunk, first_line_number=number + 1)
        for line, translation in zip(chunk, translations):
            number += 1
            out.write(translation.text + "\n")
            if attention_dir is not None and translation.attention is not None:
                write_attention(attention_dir, number, line, translation)
        out.flush()
        if bar is not None:
            bar.update(len(chunk))
    return number


def write_attention(folder: Path, number: int, line: str, translation: Translation) -> None:
    """NNNN.json (tokens and weights) and NNNN.png (the heatmap) for one translated line; for a
    model with several heads also NNNN.heads.png, a grid of every head of the alignment layer."""
    # matplotlib costs ~0.6 s to import: only for --attention
    from nmt.plot import attention_figure, figure_to_png_bytes, heads_figure

    assert translation.attention is not None  # called for translations with attention only
    labels = translation.attention_labels()
    weights = np.round(translation.attention.astype(np.float64), 4)  # (T, S)
    stem = folder / f"{number:04d}"
    atomic_write_json(stem.with_suffix(".json"), {
        "line": number, "source": line, "translation": translation.text,
        "src_tokens": translation.src_tokens, "tgt_tokens": labels,
        "weights": weights.tolist(),  # one row per target token, one column per source token
    })
    png = figure_to_png_bytes(attention_figure(translation.attention, translation.src_tokens,
                                               labels, title=line[:60]))
    _write_bytes(stem.with_suffix(".png"), png)
    if translation.heads is not None:
        grid = figure_to_png_bytes(heads_figure(translation.heads, translation.src_tokens, labels,
                                                title=line[:60]))
        _write_bytes(stem.with_suffix(".heads.png"), grid)


def _write_bytes(path: Path, data: bytes) -> None:
    def write(tmp: Path) -> None:
        tmp.write_bytes(data)

    atomic_write(path, write)


def interactive(translator: Translator, out: TextIO = sys.stdout) -> None:
    """Type Chinese, get English, until end of input (Ctrl-D) or Ctrl-C."""
    translator.segmenter.warm_up()  # load the dictionary before the first sentence, not after
    print("Type a Chinese sentence and press Enter; Ctrl-D quits.", file=sys.stderr)
    while True:
        try:
            line = input("zh> ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return
        if line.strip():
            translation = translator.translate([line])[0]
            print(f"en> {translation.text}", file=out, flush=True)
