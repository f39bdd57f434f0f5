"""Chinese segmentation (jieba words or single characters) and English Moses tokenization.

One code path serves training data and text to translate: both call `normalize` first, then split.
jieba and sacremoses are imported on first use, so a cached `prepare` never pays for them.
"""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path
from typing import Any

from nmt.config.schema import DataConfig
from nmt.data.normalize import normalize_en, normalize_zh
from nmt.errors import NMTError

# `char` level: every character is a token, except that a run of Latin letters or digits (a name,
# a number, `DVD`) stays one token: splitting `Tom` into T-o-m helps nobody.
_CHAR_TOKENS = re.compile(r"[A-Za-z0-9]+(?:[.'\-][A-Za-z0-9]+)*|\S")

# Moses splits `7:45` into `7 : 45` (good for the vocabulary) but detokenizes it as `7: 45`.
_TIME_COLON = re.compile(r"(?<=\d): (?=\d\d\b)")

_jieba_lock = threading.Lock()
# (user-dict path, its mtime and size) → jieba.Tokenizer; (None,) for no user dictionary.
_jieba_tokenizers: dict[tuple, object] = {}


def _jieba(user_dict: str | None):
    """A ready jieba tokenizer, loaded once per process (the dictionary load takes ~1 s)."""
    key: tuple = (None,)
    if user_dict is not None:  # an edited user dictionary is loaded again
        stat = Path(user_dict).stat()
        key = (user_dict, stat.st_mtime_ns, stat.st_size)
    with _jieba_lock:
        if key not in _jieba_tokenizers:
            import jieba

            jieba.setLogLevel(logging.WARNING)  # silence "Building prefix dict ..." on stderr
            # The default tokenizer is jieba's global; a user dictionary gets its own instance so
            # that two segmenters in one process never change each other's words.
            tokenizer = jieba.dt if user_dict is None else jieba.Tokenizer()
            tokenizer.initialize()
            if user_dict is not None:
                try:
                    tokenizer.load_userdict(user_dict)
                except (ValueError, UnicodeDecodeError) as error:
                    raise NMTError(f"data.zh_user_dict = {user_dict}: not a jieba dictionary "
                                   f"('word [freq] [tag]' per line): {error}") from None
            _jieba_tokenizers[key] = tokenizer
        return _jieba_tokenizers[key]


class ChineseSegmenter:
    """Normalize and segment Chinese text into words (jieba) or characters."""

    def __init__(self, level: str = "word", user_dict: str | None = None,
                 traditional_to_simplified: bool = False):
        if level not in ("word", "char"):
            raise NMTError(f"data.zh_level = {level!r} is not allowed; choose 'word' or 'char'")
        if user_dict is not None and not Path(user_dict).is_file():
            raise NMTError(f"data.zh_user_dict = {user_dict}: file not found; fix the path or "
                           f"remove the key")
        self.level = level
        self.user_dict = user_dict
        self.traditional_to_simplified = traditional_to_simplified
        self._jieba: Any = None  # a jieba.Tokenizer (jieba ships no types), set on first use

    def normalize(self, text: str) -> str:
        return normalize_zh(text, self.traditional_to_simplified)

    def segment(self, text: str) -> list[str]:
        """Tokens of the normalized text; never whitespace, never a token holding a space."""
        text = self.normalize(text)
        if self.level == "char":
            return _CHAR_TOKENS.findall(text)
        if self._jieba is None:
            self._jieba = _jieba(self.user_dict)
        words = self._jieba.lcut(text)
        # jieba returns the spaces between Latin words as tokens of their own.
        return [part for word in words for part in word.split()]

    def warm_up(self) -> None:
        """Load the jieba dictionary now (in a worker, before the first sentence arrives)."""
        if self.level == "word" and self._jieba is None:
            self._jieba = _jieba(self.user_dict)

    def __getstate__(self):  # jieba's dictionary is loaded again on use, not pickled
        return {**self.__dict__, "_jieba": None}


class EnglishTokenizer:
    """Normalize and Moses-tokenize English text; detokenize model output back to plain text."""

    def __init__(self, lowercase: bool = False):
        self.lowercase = lowercase
        self._moses = None

    def normalize(self, text: str) -> str:
        return normalize_en(text, self.lowercase)

    def tokenize(self, text: str) -> list[str]:
        # escape=False: keep `'` and `"` as themselves, not `&apos;` and `&quot;`.
        return self._tools()[0].tokenize(self.normalize(text), escape=False)

    def detokenize(self, tokens: list[str]) -> str:
        return _TIME_COLON.sub(":", self._tools()[1].detokenize(tokens))

    def __getstate__(self):  # the Moses objects are rebuilt on use, not pickled into workers
        return {**self.__dict__, "_moses": None}

    def _tools(self):
        if self._moses is None:
            from sacremoses import MosesDetokenizer, MosesTokenizer  # ~0.5 s of regex compiling

            self._moses = (MosesTokenizer(lang="en"), MosesDetokenizer(lang="en"))
        return self._moses


def make_tokenizers(data: DataConfig) -> tuple[ChineseSegmenter, EnglishTokenizer]:
    """The source segmenter and target tokenizer that the data config describes."""
    segmenter = ChineseSegmenter(data.zh_level, data.zh_user_dict, data.traditional_to_simplified)
    return segmenter, EnglishTokenizer(data.lowercase)
