"""The example sentences: `make eval` translates them into its results file, the ledger keeps
them, and `make docs` writes README.md's "what to expect" block from them (or says they are not
there yet), and a note on what sets apart the machines of one recipe's rows."""

from __future__ import annotations

import json
import re

import pytest

from helpers import REPO, write_tiny_corpus
from nmt.config.loader import load_config
from nmt.data.prepare import prepare
from nmt.decoding.plan import plan_for
from nmt.decoding.translator import Translator
from nmt.evaluation.evaluate import evaluate
from nmt.evaluation.examples import (DEFAULT_RECIPE, EXAMPLES, STUDENT_RECIPE, readme_block,
                                     recipe_config, results_section)
from nmt.evaluation.ledger import LEDGER, read_ledger, write_ledger
from nmt.evaluation.report import collect_runs
from nmt.evaluation.results_page import EXAMPLES as EXAMPLES_BLOCK
from nmt.evaluation.results_page import RECIPES, markers, recipe_table, update_docs
from nmt.training.loop import train

NOT_YET = "they appear here after `make eval` (or `make student`) and `make docs`"
BF16, FP32 = "AMD EPYC, 1 thread, bfloat16", "AMD EPYC, 1 thread, float32"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """configs/smoke.yaml trained for its few dozen steps on a tiny corpus, then evaluated."""
    root = tmp_path_factory.mktemp("examples")
    corpus = write_tiny_corpus(root / "raw" / "cmn.txt")
    config = load_config(REPO / "configs" / "smoke.yaml", [
        f"data.corpus={corpus}", f"data.prepared_dir={root / 'prepared'}",
        f"runs_dir={root / 'runs'}", "training.device=cpu"])
    prepare(config)
    train(config)
    return config, evaluate(plan_for(config))


def _entry(name: str, machine: str, **values) -> dict:
    return {"name": name, "run": name.split(" ")[0], "machine": machine, "source": "by hand",
            **values}


@pytest.mark.e2e
def test_make_eval_translates_the_examples_into_its_results_file(trained):
    config, results = trained
    saved = json.loads((config.run_dir / "results.json").read_text(encoding="utf-8"))
    assert saved["examples"] == results["examples"]
    assert [example["zh"] for example in results["examples"]] == list(EXAMPLES)
    # the plan's own translations, as `make translate` would give them
    translator = Translator.from_plan(plan_for(config), keep_attention=False)
    assert [example["en"] for example in results["examples"]] == [
        translation.text for translation in translator.translate(list(EXAMPLES))]
    assert any(example["en"] for example in results["examples"])  # the trained model says something


@pytest.mark.e2e
def test_the_ledger_keeps_them_and_the_readme_block_shows_them(trained, tmp_path):
    config, results = trained
    rows = collect_runs(config.runs_dir)
    [own] = [row for row in rows if row["name"] == "smoke"]
    assert own["examples"] == results["examples"]
    ledger = tmp_path / "results.jsonl"  # the row marked by hand as the default's recipe
    write_ledger(ledger, [_entry("smoke", own["machine"], recipe=f"`{DEFAULT_RECIPE}`: a test")])
    readme, page = tmp_path / "README.md", tmp_path / "results.md"
    blocks = [f"{begin}\nold\n{end}" for begin, end in (markers(RECIPES), markers(EXAMPLES_BLOCK))]
    readme.write_text("# README\n\n" + "\n\nprose\n\n".join(blocks) + "\n", encoding="utf-8")
    page.write_text("# Results\n\n{}\nold\n{}\n".format(*markers()), encoding="utf-8")
    update_docs(ledger, rows, config.runs_dir, page, readme)

    [kept] = [entry for entry in read_ledger(ledger) if entry["name"] == "smoke"]
    assert kept["examples"] == results["examples"] and kept["recipe"] == f"`{DEFAULT_RECIPE}`: a test"
    text = readme.read_text(encoding="utf-8")
    block = text.split(markers(EXAMPLES_BLOCK)[0])[1].split(markers(EXAMPLES_BLOCK)[1])[0]
    assert f"- `make train && make eval` (`{DEFAULT_RECIPE}`): " in block
    assert f"on {own['machine']} (`smoke`)." in block
    assert f"- `make student` (`{STUDENT_RECIPE}`): no row measured yet." in block
    assert f"| | default: `smoke`, {own['machine']} |" in block
    for example in results["examples"]:
        assert f"| {example['zh']} | {example['en'] or '(empty)'} |" in block
    assert NOT_YET not in block and "\nold\n" not in text and "\n\nprose\n\n" in text
    examples = page.read_text(encoding="utf-8").split("### Example translations")[1]
    assert f"| `smoke` | {own['machine']} | {results['examples'][0]['en']} |" in examples


def test_no_row_with_examples_says_when_they_come_and_still_what_to_expect():
    entries = [_entry("tatoeba (ensemble)", FP32, recipe=f"`{DEFAULT_RECIPE}`: `make train`",
                      train_seconds=1802.0, test_bleu=32.591, bleu_ci=1.7, sentences_per_second=62.4),
               _entry("student (int8)", FP32, recipe=f"`{STUDENT_RECIPE}`", train_seconds=3000.0,
                      test_bleu=31.96),
               _entry("old (ensemble)", BF16, recipe=f"`{DEFAULT_RECIPE}` of an earlier commit",
                      test_bleu=35.39, examples=[{"zh": EXAMPLES[0], "en": "Not a default's."}])]
    block = readme_block(entries)
    assert block.splitlines()[:2] == [
        f"- `make train && make eval` (`{DEFAULT_RECIPE}`): 30m02s of training, test BLEU 32.59 "
        f"± 1.70, 62 sentences/s on {FP32} (`tatoeba (ensemble)`).",
        f"- `make student` (`{STUDENT_RECIPE}`): 50m00s of training, test BLEU 31.96 on {FP32} "
        f"(`student (int8)`)."]
    assert NOT_YET in block and "|" not in block and "Not a default's" not in block
    assert "No row holds translations" in results_section(entries[:2])
    assert "| `old (ensemble)` | AMD EPYC, 1 thread, bfloat16 | Not a default's. |" in results_section(entries)


def test_rows_side_by_side_and_those_without_named():
    said = [{"zh": zh, "en": f"Line {number} | said."} for number, zh in enumerate(EXAMPLES[:2])]
    entries = [_entry("a (ensemble)", BF16, recipe=f"`{DEFAULT_RECIPE}`", test_bleu=37.2),
               _entry("b (ensemble)", FP32, recipe=f"`{DEFAULT_RECIPE}`: by hand", test_bleu=32.6,
                      examples=said),
               _entry("s (int8)", FP32, recipe=f"`{STUDENT_RECIPE}`", test_bleu=31.9,
                      examples=said[:1])]
    block = readme_block(entries)
    assert f"| | default: `b (ensemble)`, {FP32} | student: `s (int8)`, {FP32} |" in block
    assert f"| {EXAMPLES[0]} | Line 0 \\| said. | Line 0 \\| said. |" in block
    assert f"| {EXAMPLES[1]} | Line 1 \\| said. | - |" in block
    assert "translated the example sentences: `a (ensemble)`." in block and NOT_YET not in block


def test_a_recipe_on_two_machines_gets_a_note_on_what_sets_them_apart():
    assert [recipe_config({"recipe": recipe}) for recipe in (
        "`configs/tatoeba.yaml`", "`configs/tatoeba.yaml`: `make train` in a fresh clone",
        "`configs/tatoeba.yaml` of an earlier commit", "`configs/x.yaml`, `training.lr=1`", None)] == [
        "configs/tatoeba.yaml", "configs/tatoeba.yaml", None, None, None]
    entries = [_entry("fresh (ensemble)", BF16, recipe=f"`{DEFAULT_RECIPE}`: fresh", test_bleu=37.23),
               _entry("tatoeba (ensemble)", FP32, recipe=f"`{DEFAULT_RECIPE}`", test_bleu=32.59),
               _entry("quiet (ensemble)", FP32, recipe=f"`{DEFAULT_RECIPE}` of an earlier commit",
                      test_bleu=35.0),
               _entry("s (int8)", FP32, recipe=f"`{STUDENT_RECIPE}`", test_bleu=31.9)]
    table = recipe_table(entries)
    note = table.split("\n\n")[1]
    assert note.startswith(f"Why one recipe's rows differ: `{DEFAULT_RECIPE}` gave test BLEU 37.23 on "
                           f"{BF16} and 32.59 on {FP32}. A machine names the CPU's model")
    assert "AVX-512 BF16" in note and "AVX2" in note and STUDENT_RECIPE not in note
    assert "\n\n" not in recipe_table(entries[1:])  # one machine per recipe: no note


def test_the_readme_block_is_the_one_make_docs_writes_from_the_ledger():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    begin, end = markers(EXAMPLES_BLOCK)
    assert begin in text and end in text, "README.md lost the markers of its examples block"
    assert text.split(begin)[1].split(end)[0].strip() == readme_block(read_ledger(REPO / LEDGER)), \
        "README.md's examples block is not what `make docs` writes from docs/results.jsonl: make docs"


def test_the_default_and_the_student_are_the_makefiles():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert re.search(rf"^CONFIG +\?= {re.escape(DEFAULT_RECIPE)}$", makefile, re.M)
    assert re.search(rf"^STUDENT +\?= {re.escape(STUDENT_RECIPE)}$", makefile, re.M)


def test_the_examples_are_ours_not_lines_of_the_corpus():
    corpus = REPO / "data" / "raw" / "cmn-eng" / "cmn.txt"
    if not corpus.is_file():
        pytest.skip("no corpus here (make data)")
    sources = {line.split("\t")[1] for line in corpus.read_text(encoding="utf-8").splitlines()
               if line.count("\t") >= 1}
    assert not sources & set(EXAMPLES) and len(EXAMPLES) == len(set(EXAMPLES)) >= 6
    assert {"我明天要去北京看我的爷爷和奶奶。", "这家饭馆的菜又便宜又好吃。", "汤姆喜欢猫。"} <= set(EXAMPLES)
