"""Pharaoh links, the gold alignment file, and the pairs to align.

A link (i, j) joins Chinese unit i and English unit j, both counted from 0; written `i-j`.
The units are the gold file's (../shared/data/align/README.md): Chinese one token per character
(a run of Latin letters or digits stays one token), English Moses-tokenized (`escape=False`).

Input files are read in one of three layouts, fixed by the first non-empty line:
- 2 columns `Chinese<TAB>English`: raw text; the units are made here (characters, Moses tokens);
- 3 columns `id<TAB>Chinese units<TAB>English units`: already in units, space-separated (the
  annotators' input);
- 5 columns: the gold file itself (id, Chinese units, English units, Sure links, Possible links).
An empty line is an empty pair: it gets an empty line of links.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from nmt.data.tokenize import ChineseSegmenter, EnglishTokenizer
from nmt.errors import NMTError
from nmt.io import decode_lines

Link = tuple[int, int]  # (Chinese unit, English unit)

_LINK = re.compile(r"(\d+)-(\d+)")
_LATIN = re.compile(r"[A-Za-z0-9]")


@dataclass
class AlignPair:
    src_units: list[str]  # Chinese characters: what a link's first index counts
    tgt_units: list[str]  # English Moses tokens: what a link's second index counts
    src_text: str  # the Chinese the model's segmenter reads
    tgt_text: str  # the English the model's tokenizer reads
    id: str | None = None
    sure: set[Link] = field(default_factory=set)  # gold links (5-column input only)
    possible: set[Link] = field(default_factory=set)  # includes the sure ones


def parse_links(text: str, where: str = "links") -> set[Link]:
    """`0-0 1-2 ...` → {(0, 0), (1, 2), ...}; anything else is an NMTError naming `where`."""
    links = set()
    for item in text.split():
        match = _LINK.fullmatch(item)
        if match is None:
            raise NMTError(f"{where}: {item!r} is not a link; write i-j (Chinese index - English "
                           f"index, from 0)")
        links.add((int(match.group(1)), int(match.group(2))))
    return links


def format_links(links) -> str:
    """Pharaoh format, sorted by Chinese then English index: `0-0 1-0 2-1`."""
    return " ".join(f"{i}-{j}" for i, j in sorted(links))


def join_units(units: list[str]) -> str:
    """Chinese units back into text: no spaces, except between two Latin/digit runs (`Tom Jackson`)."""
    text = ""
    for unit in units:
        if text and _LATIN.search(text[-1]) and _LATIN.match(unit):
            text += " "
        text += unit
    return text


def read_pairs(path: str | Path) -> list[AlignPair]:
    """The pairs of an input file, one per line (see the module docstring for the layouts)."""
    path = Path(path)
    if not path.is_file():
        raise NMTError(f"{path}: file not found")
    # Split at "\n" only, as every reader here: a lone "\r" or U+2028 stays inside its line.
    return parse_pairs(decode_lines(path.read_bytes(), str(path)), str(path))


def parse_pairs(lines: list[str], name: str = "<input>") -> list[AlignPair]:
    """The pairs of `lines`; an error names `name` and the line number."""
    chars, moses = ChineseSegmenter("char"), EnglishTokenizer()
    columns = next((len(line.split("\t")) for line in lines if line.strip()), 2)
    if columns not in (2, 3, 5):
        raise NMTError(f"{name}: the first line has {columns} tab-separated columns; write "
                       f"Chinese<TAB>English, id<TAB>Chinese<TAB>English, or the gold format (5)")
    pairs = []
    for number, line in enumerate(lines, start=1):
        where = f"{name}:{number}"
        if not line.strip():
            pairs.append(AlignPair([], [], "", ""))
            continue
        parts = line.split("\t")
        if len(parts) != columns:
            raise NMTError(f"{where}: {len(parts)} tab-separated columns, but the first line has "
                           f"{columns}; every line must have the same layout")
        if columns == 2:
            zh, en = parts
            pairs.append(AlignPair(chars.segment(zh), moses.tokenize(en), zh, en))
            continue
        src_units, tgt_units = parts[1].split(), parts[2].split()
        pair = AlignPair(src_units, tgt_units, join_units(src_units),
                         moses.detokenize(tgt_units), parts[0])
        if columns == 5:
            pair.sure = parse_links(parts[3], f"{where} (Sure links)")
            pair.possible = parse_links(parts[4], f"{where} (Possible links)") | pair.sure
            for i, j in pair.possible:
                if i >= len(src_units) or j >= len(tgt_units):
                    raise NMTError(f"{where}: link {i}-{j} is out of range ({len(src_units)} Chinese "
                                   f"and {len(tgt_units)} English tokens)")
        pairs.append(pair)
    return pairs


def read_gold(path: str | Path) -> list[AlignPair]:
    """The gold file: every line must have the five columns, with its Sure and Possible links."""
    pairs = read_pairs(path)
    bad = next((n for n, p in enumerate(pairs, start=1) if p.id is None or not p.src_units), None)
    if bad is not None or not pairs or not any(p.sure or p.possible for p in pairs):
        where = f"{path}:{bad}" if bad is not None else str(path)
        raise NMTError(f"{where}: not a gold alignment file (id, Chinese, English, Sure links, "
                       f"Possible links: five tab-separated columns a line)")
    return pairs
