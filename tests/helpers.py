"""Test helpers: the repository root and a tiny synthetic zh–en corpus in the Tatoeba TSV format.

The corpus is made up from templates (never copied from the real one): subjects × verbs × objects,
with the quirks the real corpus has: a byte-order mark, a third attribution column, exact duplicate
lines, English sentences with two Chinese translations, full-width digits.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# (Chinese, English, English verb form takes -s)
SUBJECTS = [("汤姆", "Tom", True), ("玛丽", "Mary", True), ("约翰", "John", True),
            ("他", "He", True), ("她", "She", True), ("我", "I", False), ("我们", "We", False),
            ("你", "You", False)]
VERBS = [("喜欢", "like"), ("想要", "want"), ("需要", "need"), ("买", "buy")]
OBJECTS = [("猫", "cats"), ("狗", "dogs"), ("苹果", "apples"), ("书", "books"), ("茶", "tea"),
           ("咖啡", "coffee"), ("音乐", "music")]
# A second Chinese word for some objects: the same English sentence gets two translations.
SYNONYMS = {"猫": "猫咪", "狗": "小狗", "书": "书本"}
CREDIT = "CC-BY 2.0 (France) Attribution: tatoeba.org #{} (test) & #{} (test)"


def tiny_corpus_pairs(n_pairs: int = 200, seed: int = 0) -> list[tuple[str, str]]:
    """`n_pairs` (English, Chinese) pairs; the first is always ("Tom likes cats.", "汤姆喜欢猫。").

    Every 10th pair repeats an earlier one exactly; every 6th gives an earlier English sentence a
    second Chinese translation; every 25th has full-width digits in the Chinese side.
    """
    rng = random.Random(seed)
    base = [(f"{se} {ve}{'s' if s3 else ''} {oe}.", f"{sz}{vz}{oz}。", oz)
            for sz, se, s3 in SUBJECTS for vz, ve in VERBS for oz, oe in OBJECTS]
    first, rest = base[0], base[1:]
    rng.shuffle(rest)
    base = [first] + rest
    pairs: list[tuple[str, str]] = []
    used: list[tuple[str, str, str]] = []  # template pairs written so far
    fresh = iter(base)
    for i in range(n_pairs):
        with_synonym = [b for b in used if b[2] in SYNONYMS]
        if i and i % 10 == 0:
            pairs.append(pairs[rng.randrange(len(pairs))])
        elif i % 6 == 5 and with_synonym:
            en, zh, obj = rng.choice(with_synonym)
            pairs.append((en, zh.replace(obj, SYNONYMS[obj])))
        elif i % 25 == 24:
            n = rng.randrange(2, 10)
            pairs.append((f"Tom has {n} books and {i} cats.", f"汤姆有{chr(0xFF10 + n)}本书和{i}只猫。"))
        else:
            used.append(next(fresh, None) or rng.choice(base))
            pairs.append(used[-1][:2])
    return pairs


def write_tiny_corpus(path: str | Path, n_pairs: int = 200) -> Path:
    """Write a Tatoeba-style TSV (BOM, 3 columns, LF) of `n_pairs` lines to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{en}\t{zh}\t{CREDIT.format(2 * i + 1, 2 * i + 2)}"
             for i, (en, zh) in enumerate(tiny_corpus_pairs(n_pairs))]
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def as_family(model, architecture: str | None = None, **changes):
    """A ModelConfig of a smoke config as `architecture` (a Transformer is
    configs/smoke_transformer.yaml's tiny one), with `changes` laid over it: shared keys
    (dropout, tie_embeddings, target_order) and keys of that family's section."""
    from nmt.config.loader import load_config

    architecture = architecture or model.architecture
    if architecture != model.architecture:
        name = "smoke_transformer" if architecture == "transformer" else "smoke"
        tiny = load_config(REPO / "configs" / f"{name}.yaml")
        model = dataclasses.replace(model, architecture=architecture,
                                    **{architecture: getattr(tiny.model, architecture)})
    shared = {f.name for f in dataclasses.fields(model)} - {"rnn", "transformer"}
    section = dataclasses.replace(getattr(model, architecture),
                                  **{key: value for key, value in changes.items() if key not in shared})
    return dataclasses.replace(model, **{key: value for key, value in changes.items() if key in shared},
                               **{architecture: section})


def run_align_script(monkeypatch, *args: str) -> int:
    """scripts/align.py in this process (no second torch import): its exit status."""
    import runpy
    import sys

    monkeypatch.setattr(sys, "argv", ["align.py", *args])
    try:
        runpy.run_path(str(REPO / "scripts" / "align.py"), run_name="__main__")
    except SystemExit as exit:
        return int(exit.code or 0)
    return 0
