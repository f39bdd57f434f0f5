"""A few everyday sentences that `make eval` translates beside its split, so that a reader sees
what a model says and not only its BLEU; and the blocks `make docs` writes from them.

The sentences are ours, written for this file (none is a line of the Tatoeba corpus), short and
everyday as Tatoeba's are. `evaluate` (nmt/evaluation/evaluate.py) records each with its
translation in the results file, under "examples": [{"zh": ..., "en": ...}]; `make docs` keeps
them in the ledger (docs/results.jsonl) and writes
- README.md's "examples" block: what `make train && make eval` and `make student` gave on the
  rows the recipe table marks as the default's and the student's, each row's machine named,
  and their translations side by side (`readme_block`);
- docs/results.md's "Example translations": every row that holds them (`results_section`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from nmt.evaluation.report_table import format_cell

if TYPE_CHECKING:
    from nmt.decoding.translator import Translator

EXAMPLES = (
    "我明天要去北京看我的爷爷和奶奶。",
    "这家饭馆的菜又便宜又好吃。",
    "汤姆喜欢猫。",
    "外面下雨了，别忘了带伞。",
    "你能帮我把窗户打开吗？",
    "她每天早上七点起床。",
)
DEFAULT_RECIPE = "configs/tatoeba.yaml"  # the Makefile's CONFIG: `make train`, `make eval`
STUDENT_RECIPE = "configs/tatoeba_student.yaml"  # the Makefile's STUDENT: `make student`
# (config file, what makes its row, its column's name in the README)
TARGETS = ((DEFAULT_RECIPE, "make train && make eval", "default"),
           (STUDENT_RECIPE, "make student", "student"))
# a recipe "`configs/x.yaml`" or "`configs/x.yaml`: how it was run" is the file as it is; one
# "of an earlier commit" or with overrides ("`configs/x.yaml`, `training.lr=...`") is not
AS_IT_IS = re.compile(r"`(configs/[^`]+\.yaml)`(?::|$)")


def translate_examples(translator: Translator) -> list[dict[str, str]]:
    """Each example sentence and its translation, as the translator decodes (a plan's ensemble,
    reranking and search, or an engine)."""
    translations = translator.translate(list(EXAMPLES))
    return [{"zh": zh, "en": translation.text} for zh, translation in zip(EXAMPLES, translations)]


def recipe_config(entry: dict) -> str | None:
    """The config file a ledger entry is the recipe row of, as the file is; None for any other."""
    match = AS_IT_IS.match(entry.get("recipe") or "")
    return match.group(1) if match else None


def recipe_rows(entries: list[dict], config: str) -> list[dict]:
    """The rows `make eval` gave for `config` as it is, sorted by machine and name."""
    return sorted((e for e in entries if recipe_config(e) == config),
                  key=lambda e: (e["machine"], e["name"]))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _figures(entry: dict) -> str:
    """A row's figures: its training time, test BLEU ± 95%, sentences/s, machine and name."""
    ci = entry.get("bleu_ci")
    speed = entry.get("sentences_per_second")
    return (f"{format_cell('train_seconds', entry.get('train_seconds'))} of training, test BLEU "
            f"{format_cell('test_bleu', entry.get('test_bleu'))}"
            + ("" if ci is None else f" ± {ci:.2f}")
            + ("" if speed is None else f", {speed:.0f} sentences/s")
            + f" on {entry['machine']} (`{entry['name']}`)")


def expectations(entries: list[dict]) -> list[str]:
    """A line per target: the time and BLEU of each of its recipe rows, machine named."""
    lines = []
    for config, command, _ in TARGETS:
        rows = recipe_rows(entries, config)
        said = "; ".join(_figures(row) for row in rows) or "no row measured yet"
        lines.append(f"- `{command}` (`{config}`): {said}.")
    return lines


def examples_table(columns: list[tuple[str, dict]]) -> str:
    """A Markdown table: a line per example sentence, a column per (role, entry)."""
    sentences = list(dict.fromkeys(ex["zh"] for _, entry in columns for ex in entry["examples"]))
    lines = ["| | " + " | ".join(f"{role}: `{entry['name']}`, {entry['machine']}"
                                  for role, entry in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for zh in sentences:
        said = [next((ex["en"] for ex in entry["examples"] if ex["zh"] == zh), None)
                for _, entry in columns]
        lines.append(f"| {_cell(zh)} | " + " | ".join("-" if en is None else _cell(en) or "(empty)"
                                                      for en in said) + " |")
    return "\n".join(lines)


def readme_block(entries: list[dict]) -> str:
    """README.md's block: what to expect from `make train && make eval` and `make student`,
    and the translations of the example sentences by their rows, side by side."""
    parts = ["\n".join(expectations(entries))]
    rows = [(role, row) for config, _, role in TARGETS for row in recipe_rows(entries, config)]
    columns = [(role, row) for role, row in rows if row.get("examples")]
    if columns:
        parts.append(examples_table(columns))
    without = [f"`{row['name']}`" for role, row in rows if not row.get("examples")]
    if not columns:
        parts.append(f"No row of `{DEFAULT_RECIPE}` or `{STUDENT_RECIPE}` holds translations of "
                     f"the example sentences yet (nmt/evaluation/examples.py): they appear here "
                     f"after `make eval` (or `make student`) and `make docs`.")
    elif without:
        parts.append(f"Rows evaluated before `make eval` translated the example sentences: "
                     f"{', '.join(without)}.")
    return "\n\n".join(parts)


def results_section(entries: list[dict]) -> str:
    """docs/results.md's "Example translations": a line per row that holds them, a column per
    sentence; when none does, a sentence saying how they come."""
    rows = sorted((e for e in entries if e.get("examples")), key=lambda e: (e["machine"], e["name"]))
    title = "### Example translations"
    if not rows:
        return (f"{title}\n\nNo row holds translations of the example sentences yet: `make eval` "
                f"translates those of nmt/evaluation/examples.py into its results file, and "
                f"`make docs` brings them here.")
    sentences = list(dict.fromkeys(ex["zh"] for entry in rows for ex in entry["examples"]))
    lines = [title, "", "| run (label) | machine | " + " | ".join(sentences) + " |",
             "|---|---|" + "---|" * len(sentences)]
    for entry in rows:
        said = {ex["zh"]: ex["en"] for ex in entry["examples"]}
        lines.append(f"| `{entry['name']}` | {entry['machine']} | "
                     + " | ".join(_cell(said.get(zh, "-")) for zh in sentences) + " |")
    return "\n".join(lines)
