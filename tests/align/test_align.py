"""Alignment without a model: links and the gold format, AER, unit projection, extraction,
grow-diag-final-and."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import numpy as np
import pytest

from nmt.align.agreement import DEFAULT_BIDIRECTIONAL_METHOD
from nmt.align.extract import extract_links
from nmt.align.links import format_links, join_units, parse_links, parse_pairs, read_gold
from nmt.align.metrics import paired_bootstrap, score_alignments
from nmt.align.stage import AlignOptions, AlignResult, training_words, write_evaluation
from nmt.align.symmetrize import grow_diag_final_and
from nmt.align.units import coverage, merge_rows, project_source
from nmt.data.prepare import PreparedData
from nmt.errors import NMTError
from nmt.evaluation.report import collect_runs, format_table

# A hand-made gold line in the shared format (not taken from the shared file).
GOLD_LINE = "t-1\t汤 姆 喜 欢 猫 。\tTom likes cats .\t0-0 1-0 2-1 3-1 4-2 5-3\t"


def test_links_round_trip_and_errors():
    assert parse_links("0-0 2-1  10-3") == {(0, 0), (2, 1), (10, 3)}
    assert format_links({(2, 1), (0, 0), (10, 3)}) == "0-0 2-1 10-3"
    assert parse_links("") == set()
    with pytest.raises(NMTError, match="gold.tsv:3.*'0:1'"):
        parse_links("0-0 0:1", "gold.tsv:3")


def test_scores_perfect_empty_and_by_hand():
    sure, possible = [{(0, 0), (1, 1)}], [{(0, 0), (1, 1), (2, 1)}]
    perfect = score_alignments(sure, sure, possible)
    assert (perfect.precision, perfect.recall, perfect.aer) == (1.0, 1.0, 0.0)
    empty = score_alignments([set()], sure, possible)
    assert (empty.precision, empty.recall, empty.aer) == (0.0, 0.0, 1.0)
    # A = {0-0 (sure), 2-1 (possible only), 2-2 (wrong)}: |A∩S| = 1, |A∩P| = 2, |A| = 3, |S| = 2.
    scores = score_alignments([{(0, 0), (2, 1), (2, 2)}], sure, possible)
    assert scores.precision == pytest.approx(2 / 3) and scores.recall == pytest.approx(1 / 2)
    assert scores.aer == pytest.approx(1 - (1 + 2) / (3 + 2))
    # Corpus level: counts are summed before dividing, not averaged per pair.
    two = score_alignments([{(0, 0)}, {(0, 0), (1, 1), (5, 5)}], [{(0, 0)}, {(0, 0), (1, 1)}],
                           [{(0, 0)}, {(0, 0), (1, 1)}])
    assert two.precision == pytest.approx(3 / 4) and two.aer == pytest.approx(1 - 6 / 7)
    # Possible links listed without the sure ones count the sure ones as possible too.
    assert score_alignments(sure, sure, [set()]).aer == 0.0


def test_gold_and_input_layouts(tmp_path):
    gold = tmp_path / "gold.tsv"
    gold.write_text(GOLD_LINE + "\n", encoding="utf-8")
    [pair] = read_gold(gold)
    assert pair.src_units == list("汤姆喜欢猫。") and pair.tgt_units == ["Tom", "likes", "cats", "."]
    assert pair.src_text == "汤姆喜欢猫。" and pair.tgt_text == "Tom likes cats."
    assert pair.possible == pair.sure and (4, 2) in pair.sure

    raw = parse_pairs(["汤姆有3本书。\tTom doesn't have 3 books.", "", "我爱Tom Jackson\tI love Tom."])
    assert raw[0].src_units == ["汤", "姆", "有", "3", "本", "书", "。"]
    assert raw[0].tgt_units == ["Tom", "doesn", "'t", "have", "3", "books", "."]
    assert raw[1].src_units == [] and raw[2].src_units[-2:] == ["Tom", "Jackson"]
    assert join_units(["我", "爱", "Tom", "Jackson"]) == "我爱Tom Jackson"

    with pytest.raises(NMTError, match=r"in\.tsv:3: 1 tab-separated columns"):
        parse_pairs(["猫\tcat", "狗\tdog", "no tab here"], "in.tsv")
    with pytest.raises(NMTError, match=r"g\.tsv:1: link 9-0 is out of range"):
        parse_pairs(["x\t猫\tcat\t9-0\t"], "g.tsv")
    with pytest.raises(NMTError, match="4 tab-separated columns"):
        parse_pairs(["a\tb\tc\td"], "bad.tsv")
    plain = tmp_path / "plain.tsv"
    plain.write_text("猫\tcat\n", encoding="utf-8")
    with pytest.raises(NMTError, match="not a gold alignment file"):
        read_gold(plain)


def test_words_characters_and_pieces_project_the_same():
    chars = list("汤姆喜欢猫。")
    assert coverage(["汤姆", "喜欢", "猫", "。"], chars) == [[0, 1], [2, 3], [4], [5]]
    assert coverage(chars, chars) == [[0], [1], [2], [3], [4], [5]]
    assert coverage(["▁汤", "姆喜", "欢猫", "。"], chars) == [[0], [1, 2], [3, 4], [5]]
    # Normalization changed a character (? → ？) or the case: still matched position by position.
    assert coverage(["你", "好", "？"], ["你", "好", "?"]) == [[0], [1], [2]]
    units = ["Tom", "doesn", "'t", "like", "cats", "."]
    assert coverage(["tom", "doesn", "'t", "like", "cats", "."], units) == [[0], [1], [2], [3], [4], [5]]
    assert coverage(["▁Tom", "▁does", "n", "'", "t", "▁li", "ke", "▁cats", "▁."], units) == [
        [0], [1], [1], [2], [2], [3], [3], [4], [5]]
    assert coverage(["Tom@@", "my", "likes"], ["Tommy", "likes"]) == [[0], [0], [1]]
    # A piece spanning two units covers both; spellings of different length still match up.
    assert coverage(["can't"], ["can", "'t"]) == [[0, 1]]
    assert coverage(["ﬁne", "day"], ["fine", "day"])[1] == [1]


def test_pieces_are_merged_and_words_spread_to_characters():
    weights = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], dtype=np.float32)  # (T=3, S=2)
    merged = merge_rows(weights, [[0], [1], [1]], 3)  # pieces 1 and 2 make unit 1; unit 2 has none
    np.testing.assert_allclose(merged, [[0.9, 0.1], [0.4, 0.6], [0.0, 0.0]])
    links = extract_links(merged, "argmax")
    assert links == {(0, 0), (1, 1)}  # the uncovered unit gets no link
    assert project_source(links, [[0, 1], [2]]) == {(0, 0), (1, 0), (2, 1)}


def test_extraction_methods():
    weights = np.array([[0.7, 0.2, 0.1],  # unit 0 → token 0
                        [0.6, 0.3, 0.1],  # unit 1 → token 0 too
                        [0.1, 0.3, 0.6]], dtype=np.float32)  # (J=3, S=3)
    assert extract_links(weights, "argmax") == {(0, 0), (0, 1), (2, 2)}
    assert extract_links(weights, "threshold", 0.3) == {(0, 0), (0, 1), (1, 1), (1, 2), (2, 2)}
    # Columns: token 0 → unit 0, token 1 → units 1 and 2 tie (first wins), token 2 → unit 2.
    assert extract_links(weights, "intersect") == {(0, 0), (2, 2)}
    assert extract_links(weights, "union") == {(0, 0), (0, 1), (1, 1), (2, 2)}
    assert extract_links(weights, "grow-diag-final-and") == {(0, 0), (0, 1), (1, 1), (2, 2)}
    assert extract_links(np.zeros((0, 2)), "argmax") == set()
    with pytest.raises(ValueError, match="unknown alignment method"):
        extract_links(weights, "best")


def test_grow_diag_final_and_by_hand():
    # Both agree on 0-0 and 2-2; 1-1 touches 0-0 diagonally and aligns new words: grown;
    # 3-3 is only in one direction, far from the rest, but its words are unaligned: final-and;
    # 0-2 is only in one direction and both its words are aligned already: left out.
    forward = {(0, 0), (1, 1), (2, 2), (0, 2)}
    backward = {(0, 0), (2, 2), (3, 3)}
    assert grow_diag_final_and(forward, backward) == {(0, 0), (1, 1), (2, 2), (3, 3)}
    # Grow only into links one direction has: 1-0 is a neighbour but no direction proposes it.
    assert grow_diag_final_and({(0, 0)}, {(0, 0)}) == {(0, 0)}
    # A neighbour whose two words are both aligned already is not grown into.
    assert grow_diag_final_and({(0, 0), (1, 1), (0, 1)}, {(0, 0), (1, 1)}) == {(0, 0), (1, 1)}
    assert grow_diag_final_and(set(), set()) == set()


def test_report_shows_aer(tmp_path):
    (tmp_path / "dot" / "checkpoints").mkdir(parents=True)
    (tmp_path / "dot" / "alignment.json").write_text('{"aer": 0.4123, "aligner": "attention"}')
    (tmp_path / "eflomal-char").mkdir()
    (tmp_path / "eflomal-char" / "alignment.json").write_text('{"aer": 0.151, "aligner": "eflomal"}')
    rows = collect_runs(tmp_path)
    assert [(r["name"], r["attention"], r["aer"]) for r in rows] == [
        ("dot", None, pytest.approx(41.23)), ("eflomal-char", "eflomal", pytest.approx(15.1))]
    assert format_table(rows).splitlines()[0].split()[-4:] == ["AER", "post.", "decoding", "settings"]
    assert format_table(rows).splitlines()[3].split()[-3:] == ["15.10", "-", "-"]  # AER, post., settings


def test_alignment_json_keeps_every_evaluation_of_one_checkpoint(tmp_path):
    path = tmp_path / "run" / "alignment.json"
    (tmp_path / "run" / "checkpoints").mkdir(parents=True)
    gold = "gold.tsv"

    def evaluate(weights, method, aer, step=100, **more):
        description = {"aligner": "attention", "attention": "additive", "weights": weights,
                       "method": method, "checkpoint": "runs/run/checkpoints/best.pt", "step": step,
                       "layer": None, "head": None, **more}
        scores = score_alignments([{(0, 0)}], [{(0, 0)}], [set()])
        scores.aer = aer  # the figure itself does not matter here
        return write_evaluation(path, "run", gold, AlignResult([{(0, 0)}], None, description), scores)

    evaluate("posterior", "grow-diag-final-and", 0.186)
    evaluate("attention", "threshold", 0.30, threshold=0.3)
    report = evaluate("attention", "argmax", 0.298)
    assert report["method"] == "argmax" and report["aer"] == 0.298  # the latest at the top
    assert report["evaluations"] == {
        "posterior grow-diag-final-and": {"aer": 0.186, "precision": 1.0, "recall": 1.0},
        "attention threshold 0.3": {"aer": 0.30, "precision": 1.0, "recall": 1.0},
        "attention argmax": {"aer": 0.298, "precision": 1.0, "recall": 1.0}}
    row = collect_runs(tmp_path)[0]
    assert (row["aer"], row["aer_posterior"]) == (pytest.approx(29.8), pytest.approx(18.6))

    retrained = evaluate("posterior", "grow-diag-final-and", 0.17, step=200)  # another checkpoint
    assert list(retrained["evaluations"]) == ["posterior grow-diag-final-and"]
    row = collect_runs(tmp_path)[0]
    assert (row["aer"], row["aer_posterior"]) == (None, pytest.approx(17.0))
    path.write_text("{not json")
    assert list(evaluate("attention", "argmax", 0.3)["evaluations"]) == ["attention argmax"]


def test_options_pick_a_method_per_aligner():
    attention, eflomal = AlignOptions("attention"), AlignOptions("eflomal")
    attention.resolve(channel=False, posterior=False)
    eflomal.resolve(channel=False, posterior=False)
    assert (attention.method, eflomal.method) == ("argmax", "grow-diag-final-and")
    # Left open, the weights are the run's best measured: both directions where it has a channel
    # model, else a recurrent model's posterior; a layer or head asks for the attention itself.
    both, posterior, head = AlignOptions(), AlignOptions(), AlignOptions(layer=0)
    both.resolve(channel=True, posterior=True)
    posterior.resolve(channel=False, posterior=True)
    head.resolve(channel=True, posterior=True)
    assert (both.weights, both.method) == ("bidirectional", DEFAULT_BIDIRECTIONAL_METHOD)
    assert (posterior.weights, posterior.method) == ("posterior", "grow-diag-final-and")
    assert (head.weights, head.method) == ("attention", "argmax")
    with pytest.raises(NMTError, match="--method argmax with --aligner eflomal"):
        AlignOptions("eflomal", "argmax").check()
    with pytest.raises(NMTError, match="--threshold"):
        AlignOptions("attention", "threshold", 0.0).check()


def test_paired_bootstrap_tells_a_real_difference_from_luck():
    sure = [{(0, 0), (1, 1)} for _ in range(30)]
    possible = [set() for _ in sure]
    perfect, half = [set(s) for s in sure], [{(0, 0)} for _ in sure]
    test = paired_bootstrap(perfect, half, sure, possible, resamples=200)
    assert test.difference == pytest.approx(1 / 3) and test.low > 0 and test.a_worse_or_equal == 0.0
    same = paired_bootstrap(half, half, sure, possible, resamples=50)
    assert (same.difference, same.low, same.high, same.a_worse_or_equal) == (0.0, 0.0, 0.0, 1.0)
    # better on one pair in thirty, worse on none: the interval reaches zero
    one = paired_bootstrap([set(s) for s in sure[:1]] + half[1:], half, sure, possible, resamples=200)
    assert one.difference > 0 and one.low == 0.0
    with pytest.raises(ValueError, match="alignments for 30 gold ones"):
        paired_bootstrap(perfect[:2], half, sure, possible)


def test_compare_alignments_script(tmp_path, monkeypatch, capsys):
    gold = tmp_path / "gold.tsv"
    gold.write_text(GOLD_LINE + "\n" + GOLD_LINE.replace("t-1", "t-2") + "\n", encoding="utf-8")
    good, bad = tmp_path / "good.links", tmp_path / "bad.links"
    good.write_text("0-0 1-0 2-1 3-1 4-2 5-3\n0-0 1-0 2-1 3-1 4-2 5-3\n", encoding="utf-8")
    bad.write_text("0-1\n0-1\n", encoding="utf-8")
    script = str(Path(__file__).resolve().parents[2] / "scripts" / "compare_alignments.py")

    def run(*args):
        monkeypatch.setattr(sys, "argv", [script, *map(str, args)])
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as exit:
            return int(exit.code or 0)
        return 0

    assert run(gold, bad, good, "--resamples", 20) == 0
    out = capsys.readouterr().out
    assert f"{good}: AER 0.0" in out and "AER(A) − AER(B) = 100.0 points" in out
    one_line = tmp_path / "short.links"
    one_line.write_text("0-0\n", encoding="utf-8")
    assert run(gold, one_line, good) == 2
    assert "1 lines of links for 2 gold pairs" in capsys.readouterr().err


@pytest.mark.parametrize("subword, words", [(True, [["Run", "."], ["I", "'m", "reading", "."]]),
                                            (False, [["▁R", "un", "▁."], ["▁I", "▁'", "m", "▁read", "ing", "▁."]])])
def test_eflomal_learns_from_words_not_subword_pieces(tmp_path, subword, words):
    # The gold's English is words: eflomal trained on pieces ("▁R un") never sees them together.
    (tmp_path / "train.tok.en").write_text("▁R un ▁.\n▁I ▁' m ▁read ing ▁.\n", encoding="utf-8")
    assert training_words(PreparedData(tmp_path, subword=subword), "en") == words
