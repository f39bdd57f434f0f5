"""Unicode and whitespace clean-up for both sides, before segmentation, dedup and splitting.

The same functions clean training data and, later, text to translate, so a sentence typed by a
user meets the model in the form the model was trained on.

Chinese, deliberately:
- NFKC turns full-width Latin letters and digits (`３只猫`, `ＤＶＤ`) into ASCII, the ideographic
  space into a space, and compatibility characters into their usual forms.
- But NFKC also turns the full-width clause punctuation `，？！：；` into ASCII, while it leaves
  `。、“”` alone: a sentence would end in `。` or `?`, a mix of two scripts. Chinese text writes
  these marks full-width, and the corpus mostly does too (`？` 3,711 times, `?` 512 times), so
  NFKC skips them, and ASCII `, ? ! : ;` become full width, which also merges the two spellings
  into one vocabulary entry. Between two ASCII letters or digits they stay ASCII (`3,000`,
  `10:30`).
- Spaces next to a Chinese character or mark carry no meaning and are removed (`我 爱 Tom` →
  `我爱Tom`); spaces between Latin words (`Tom Jackson`) are kept, collapsed to one.
- Traditional → simplified is an option (OpenCC's `t2s` table), after NFKC.

English: NFKC, curly quotes → straight ones (the corpus writes `'` and `"`; Moses splits
contractions only on the straight apostrophe), whitespace collapsed, optional lowercasing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Zero-width and other invisible format characters (the corpus has U+200B in Chinese sentences).
_INVISIBLE = re.compile("[\u200b\u200c\u200d\u2060\ufeff\u00ad]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
_SPACES = re.compile(r"\s+")

_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
_SPACE_BY_CJK = re.compile(f"(?<=[{_CJK}]) | (?=[{_CJK}])")

_FULL_WIDTH = {",": "，", "?": "？", "!": "！", ":": "：", ";": "；"}
_NFKC_RUNS_ZH = re.compile(f"[^{''.join(_FULL_WIDTH.values())}]+")  # spares full-width marks
# An ASCII clause mark, unless it sits between two ASCII letters/digits (3,000 · 10:30).
_ASCII_CLAUSE_MARK = re.compile(r"[,?!:;](?![A-Za-z0-9])|(?<![A-Za-z0-9])[,?!:;]")

_CURLY_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"'})


def _nfkc(match: re.Match) -> str:
    return unicodedata.normalize("NFKC", match.group())


def _common(text: str, nfkc_runs: re.Pattern | None = None) -> str:
    text = _CONTROL.sub(" ", _INVISIBLE.sub("", text))  # first, so NFKC sees what remains
    text = nfkc_runs.sub(_nfkc, text) if nfkc_runs else unicodedata.normalize("NFKC", text)
    return _SPACES.sub(" ", text).strip()


def normalize_zh(text: str, traditional_to_simplified: bool = False) -> str:
    """Clean one Chinese sentence (see the module docstring for the choices)."""
    text = _common(text, nfkc_runs=_NFKC_RUNS_ZH)
    text = _ASCII_CLAUSE_MARK.sub(lambda m: _FULL_WIDTH[m.group()], text)
    text = _SPACE_BY_CJK.sub("", text)
    if traditional_to_simplified:
        text = _opencc_t2s().convert(text)
    return text


def normalize_en(text: str, lowercase: bool = False) -> str:
    """Clean one English sentence (see the module docstring for the choices)."""
    text = _common(text).translate(_CURLY_QUOTES)
    return text.lower() if lowercase else text


@lru_cache(maxsize=1)
def _opencc_t2s():
    from opencc import OpenCC  # imported only when the option is on

    return OpenCC("t2s")
