"""A token ↔ id table, built from training text and saved as one token a line.

Ids 0-3 are the specials; then tokens by frequency, most frequent first, ties in alphabetical
order, so the same text always gives the same ids.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Iterable

from nmt.errors import NMTError
from nmt.io import atomic_write_lines

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
SPECIALS = [PAD, UNK, BOS, EOS]


class Vocab:
    def __init__(self, itos: list[str]):
        if itos[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"a vocabulary starts with {SPECIALS}, got {itos[:4]}")
        self.itos = itos
        self.stoi = {token: index for index, token in enumerate(itos)}
        if len(self.stoi) != len(itos):
            raise ValueError("a vocabulary holds each token once")

    @classmethod
    def build(cls, sentences: Iterable[list[str]], min_freq: int, max_size: int) -> "Vocab":
        """Tokens seen at least `min_freq` times; `max_size` counts the four specials too."""
        counts = Counter(token for sentence in sentences for token in sentence)
        for special in SPECIALS:  # a literal "<s>" in the text must not get a second id
            counts.pop(special, None)
        kept = [t for t, n in counts.items() if n >= min_freq]
        kept.sort(key=lambda t: (-counts[t], t))
        return cls(SPECIALS + kept[: max(0, max_size - len(SPECIALS))])

    def save(self, path: str | Path) -> None:
        bad = [t for t in self.itos if not t or any(c.isspace() for c in t)]
        if bad:  # the file format is one token a line
            raise ValueError(f"tokens with whitespace cannot be saved: {bad[:3]}")
        atomic_write_lines(path, self.itos)

    @classmethod
    def load(cls, path: str | Path) -> "Vocab":
        path = Path(path)
        if not path.is_file():
            raise NMTError(f"{path}: vocabulary file not found; run the prepare stage "
                           f"(`make prepare CONFIG=...`)")
        try:
            itos = path.read_text(encoding="utf-8").split("\n")
        except UnicodeDecodeError:
            raise NMTError(f"{path}: not a vocabulary file (not UTF-8 text)") from None
        if itos and itos[-1] == "":
            itos.pop()
        if itos[: len(SPECIALS)] != SPECIALS:
            raise NMTError(f"{path}: not a vocabulary file: the first lines must be "
                           f"{' '.join(SPECIALS)}; prepare the data again")
        seen: dict[str, int] = {}
        for number, token in enumerate(itos, start=1):
            if not token or token in seen:
                what = "is empty" if not token else f"repeats line {seen[token]}"
                raise NMTError(f"{path}:{number}: bad vocabulary file, the line {what}; "
                               f"prepare the data again")
            seen[token] = number
        return cls(itos)

    def __len__(self) -> int:
        return len(self.itos)

    def __getitem__(self, token: str) -> int:
        return self.stoi.get(token, UNK_ID)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def encode(self, tokens: list[str]) -> list[int]:
        """Ids of `tokens`, UNK_ID for unknown ones; no BOS/EOS added."""
        get = self.stoi.get
        return [get(token, UNK_ID) for token in tokens]

    def decode(self, ids) -> list[str]:
        """Tokens of `ids` (ints or 0-d tensors) up to the first EOS, without PAD and BOS."""
        tokens = []
        for index in ids:
            index = int(index)
            if index == EOS_ID:
                break
            if index not in (PAD_ID, BOS_ID):
                tokens.append(self.itos[index])
        return tokens
