"""The paths of one prepared-data folder (`<prepared_dir>/<data hash>/`), as the prepare stage
(nmt/data/prepare.py) writes it and every later stage reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from nmt.data.split import SPLITS
from nmt.data.subword import model_file
from nmt.errors import NMTError

LANGS = ("zh", "en")


@dataclass
class PreparedData:
    """The paths of one prepared-data folder."""

    dir: Path
    subword: bool = False  # prepared with data.subword: the folder holds spm.<lang>.model too

    def text(self, split: str, lang: str) -> Path:
        """Cleaned sentences, one a line (the references for evaluation)."""
        return self.dir / f"{_split(split)}.{_lang(lang)}"

    def tokens(self, split: str, lang: str) -> Path:
        """The same sentences as space-separated tokens: subword pieces with data.subword."""
        return self.dir / f"{_split(split)}.tok.{_lang(lang)}"

    def source_lines(self, split: str) -> Path:
        """The corpus line number of each pair, to trace a sentence back to its credit."""
        return self.dir / f"{_split(split)}.lineno"

    def vocab(self, lang: str) -> Path:
        return self.dir / f"vocab.{_lang(lang)}"

    def arrays(self, split: str, lang: str) -> Path:
        """The prefix of the split's token ids: <prefix>.ids.npy and <prefix>.offsets.npy."""
        return self.dir / f"{_split(split)}.{_lang(lang)}"

    def subword_model(self, lang: str) -> Path:
        return model_file(self.dir, _lang(lang))

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.json"

    @property
    def manifest(self) -> dict:
        try:
            return json.loads(self.manifest_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NMTError(f"{self.manifest_path}: not found; prepare the data first "
                           f"(`make prepare CONFIG=...`)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise NMTError(f"{self.manifest_path}: damaged ({error}); delete {self.dir} and "
                           f"prepare again") from None

    def files(self) -> list[Path]:
        text = [f(s, lang) for s in SPLITS for lang in LANGS for f in (self.text, self.tokens)]
        models = [self.subword_model(lang) for lang in LANGS] if self.subword else []
        arrays = [self.dir / f"{s}.{lang}.{kind}.npy" for s in SPLITS for lang in LANGS
                  for kind in ("ids", "offsets")]  # nmt/data/token_arrays.py's names
        return (text + [self.source_lines(s) for s in SPLITS] + [self.vocab(l) for l in LANGS]
                + models + arrays)


def _split(name: str) -> str:
    if name not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
    return name


def _lang(name: str) -> str:
    if name not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {name!r}")
    return name
