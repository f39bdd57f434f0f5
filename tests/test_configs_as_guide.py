"""The shipped configs read as a guide: the default states its whole recipe, every other config
is at most one file away from a base that extends nothing, and no comment quotes a figure this
project measured (those live in docs/results.md, generated from the run folders)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from helpers import REPO

CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
MAX_CHAIN = 2  # a config and the one file it extends

# A measured figure in prose: a score next to its metric, a speed, a count of steps in the
# thousands, a decimal with two places (not a 0.xx setting such as lambda_align 0.05), a decimal
# percentage. Paper citations ("Vaswani et al., 2017") and settings ("4,000 a side", "a 400-step
# warm-up", "30 minutes") pass.
METRIC = r"(?:BLEU|chrF\+*|AER|TER|perplexity|ppl|loss|accuracy)"
FIGURE_PATTERNS = [
    re.compile(rf"\b{METRIC}\b\s*(?:of\s+|=\s*|:\s*)?[+-]?~?\d", re.IGNORECASE),  # "BLEU 35.30"
    re.compile(rf"[+-]?\d[\d.,]*\s+(?:dev\s+|test\s+)?{METRIC}\b", re.IGNORECASE),  # "+0.7 BLEU"
    re.compile(r"\d\s*(?:[a-z]+\s+)?(?:tokens|sentences|sents|words|steps|updates|it)\s*/\s*s\b"),  # speeds
    re.compile(r"\b\d{1,3}(?:,\d{3})+\s+(?:steps|updates)\b|\b\d{4,}\s+(?:steps|updates)\b"),
    re.compile(r"(?<![\d.])[1-9]\d*\.\d{2}\b"),  # "35.30", "1.77"
    re.compile(r"\b\d+\.\d+\s*%"),  # "0.29%"
]


def chain(path: Path) -> list[Path]:
    """`path` and the files its `extends:` leads through, nearest first."""
    files = [path]
    while True:
        raw = yaml.safe_load(files[-1].read_text(encoding="utf-8")) or {}
        base = raw.get("extends")
        if base is None:
            return files
        files.append((files[-1].parent / base).resolve())
        assert len(files) <= 10, f"{path}: extends makes a loop"


def comments(text: str) -> list[tuple[int, str]]:
    """(line number, comment text) of every `#` comment of a YAML file (configs quote no `#`)."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        match = re.search(r"(?:^|\s)#(.*)$", line)
        if match:
            found.append((number, match.group(1)))
    return found


def measured_figures(text: str) -> list[str]:
    """`line N: figure` for each measured figure in the comments of a config's text."""
    return [f"line {number}: {match.group(0)!r}" for number, comment in comments(text)
            for pattern in FIGURE_PATTERNS for match in pattern.finditer(comment)]


def test_the_default_states_its_whole_recipe():
    raw = yaml.safe_load((REPO / "configs" / "tatoeba.yaml").read_text(encoding="utf-8"))
    assert "extends" not in raw, "configs/tatoeba.yaml must stand alone: no extends:"
    for section in ("data", "model", "training", "search", "eval"):
        assert raw.get(section), f"configs/tatoeba.yaml names no {section}: keys"
    assert raw["model"].get("architecture") and raw["model"].get(raw["model"]["architecture"])


def test_every_key_of_the_default_says_what_it_does():
    lines = (REPO / "configs" / "tatoeba.yaml").read_text(encoding="utf-8").splitlines()
    silent = []
    for number, line in enumerate(lines):
        key = re.match(r"^\s*(\w+):(.*)$", line)
        if not key or not key.group(2).strip() or "#" in key.group(2):
            continue  # a section heading, or a key with its comment on its line
        if not (number and lines[number - 1].strip().startswith("#")):  # or just above it
            silent.append(key.group(1))
    assert not silent, f"configs/tatoeba.yaml: keys without a comment: {silent}"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_config_is_at_most_one_file_from_its_base(path):
    files = chain(path)
    assert len(files) <= MAX_CHAIN, (
        f"{path.name} extends through {[f.name for f in files[1:]]}: a config extends at most "
        f"one file, and that file extends none")


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_no_config_comment_quotes_a_measured_figure(path):
    found = measured_figures(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.name} quotes measured figures {found}: link to docs/results.md "
                       f"instead, where they are generated")


def test_the_chain_check_fails_on_a_deeper_chain(tmp_path):
    (tmp_path / "a.yaml").write_text("name: a\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    (tmp_path / "c.yaml").write_text("extends: b.yaml\n")
    assert len(chain(tmp_path / "b.yaml")) == MAX_CHAIN
    assert len(chain(tmp_path / "c.yaml")) > MAX_CHAIN


@pytest.mark.parametrize("comment", [
    "# test BLEU 35.30 against 34.15",
    "# ensemble test BLEU 35.23",
    "# +0.7 to +1.5 dev BLEU over best.pt",
    "# (AER 14.9 against 43.8 on the 50 gold pairs)",
    "# dev loss 1.77 against 1.85",
    "# one process trained 2,230 target tokens/s",
    "# decoded at 85 sentences/s",
    "# 30 minutes: 5,715 steps, still rising",
    "# 24.69 → 27.09 over the last evaluations",
    "# almost no dev token is <unk> (0.29% zh)",
])
def test_the_figure_check_finds_measured_figures(comment):
    assert measured_figures(f"key: 1  {comment}\n")


@pytest.mark.parametrize("comment", [
    "# Transformers (Vaswani et al., 2017)",
    "# OpenNMT-py's lambda_align 0.05; this recipe weighs it 0.5",
    "# 4,000 pieces a side, a 400-step warm-up, 30 minutes",
    "# adam_betas [0.9, 0.98]; N(0, d^-1/2); 3+3 layers, d 256",
    "# scores: docs/results.md; early stopping on dev BLEU",
    "# updates between dev validations (greedy BLEU on the dev set)",
])
def test_the_figure_check_passes_citations_and_settings(comment):
    assert not measured_figures(f"key: 1  {comment}\n")
