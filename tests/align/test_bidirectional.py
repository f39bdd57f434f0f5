"""Alignment from both directions: the combinations on toy matrices against links worked out by
hand, and a forward plus a reverse random model aligning end to end (the script, the stage, the
Python API and the web page)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from fastapi.testclient import TestClient
from random_checkpoint import SRC_WORDS, TGT_WORDS, single_thread, write_random_checkpoint

from helpers import run_align_script, REPO
from nmt.align import bidirectional
from nmt.align.agreement import DEFAULT_BIDIRECTIONAL_METHOD, DEFAULT_THRESHOLDS, combine
from nmt.align.aligner import AttentionAligner, SoftAlignment
from nmt.align.bidirectional import BidirectionalAligner, BidirectionalAlignment
from nmt.align.forced import forced_attention
from nmt.align.links import join_units, parse_pairs, read_gold
from nmt.align.metrics import score_alignments
from nmt.align.stage import AlignOptions, AlignResult, align, evaluation_key, write_evaluation
from nmt.align.translated import align_lines, aligner_of
from nmt.align.units import unit_links_to_tokens
from nmt.config.loader import save_config
from nmt.data.prepare import prepare
from nmt.data.vocab import Vocab
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.config.serve_schema import ServeConfig
from nmt.serve.app import create_app
from nmt.serve.runs import RunRegistry


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


# Rows English units j, columns Chinese tokens k. F: each row p_f(k | j); R: each column p_r(j | k).
F = np.array([[0.7, 0.2, 0.1],
              [0.4, 0.5, 0.1],
              [0.1, 0.3, 0.6]])
R = np.array([[0.6, 0.1, 0.2],
              [0.3, 0.4, 0.1],
              [0.1, 0.5, 0.7]])
# forward argmax (k, j): (0,0) (1,1) (2,2); reverse argmax: (0,0) (1,2) (2,2)


@pytest.mark.parametrize("method, threshold, expected", [
    ("intersect", None, {(0, 0), (2, 2)}),
    ("union", None, {(0, 0), (1, 1), (1, 2), (2, 2)}),
    # from the intersection, (1, 1) grows in (a diagonal neighbour of (0, 0) with Chinese 1 still
    # unaligned); (1, 2) does not: both its words are aligned by then
    ("grow-diag-final-and", None, {(0, 0), (1, 1), (2, 2)}),
    # F·R = [[.42 .02 .02] [.12 .20 .01] [.01 .15 .42]]: only the two mutual argmax pass 0.25 ...
    ("product", None, {(0, 0), (2, 2)}),
    # ... and 0.14 lets in (k1, j1) = .20 and (k1, j2) = .15
    ("product", 0.14, {(0, 0), (1, 1), (1, 2), (2, 2)}),
    # (F+R)/2 = [[.65 .15 .15] [.35 .45 .10] [.10 .40 .65]]
    ("mean", None, {(0, 0), (2, 2)}),
    ("mean", 0.38, {(0, 0), (1, 1), (1, 2), (2, 2)}),
])
def test_each_combination_gives_the_links_worked_out_by_hand(method, threshold, expected):
    assert combine(F, R, method, threshold) == expected


def test_agreement_normalizes_and_keeps_mutual_best_pairs_however_diffuse():
    # unnormalized inputs: rows of F and columns of R are made distributions first
    assert combine(F * 3, R * 0.5, "product") == combine(F, R, "product")
    diffuse = np.full((3, 3), 0.3) + np.eye(3) * 0.1  # every row and column: .4 .3 .3
    diagonal = {(0, 0), (1, 1), (2, 2)}
    # product .16 < .25 and mean .4 < .5, but each is both directions' argmax
    assert combine(diffuse, diffuse, "product") == diagonal
    assert combine(diffuse, diffuse, "mean") == diagonal
    # a unit no token covers (an all-zero row and column) gets no link
    F0, R0 = F.copy(), R.copy()
    F0[1], R0[1] = 0, 0
    assert all(j != 1 for _, j in combine(F0, R0, "union"))
    with pytest.raises(ValueError, match="forward matrix is"):
        combine(F, R[:2], "product")
    with pytest.raises(ValueError, match="unknown bidirectional method"):
        combine(F, R, "argmax")
    assert combine(np.zeros((0, 2)), np.zeros((0, 2))) == set()


def test_the_reverse_attention_is_transposed_and_its_pieces_summed_into_units():
    # Chinese tokens 汤姆 | 猫 (characters 0-1 | 2); English pieces ▁Tom ▁ca ts → units Tom | cats
    forward = SoftAlignment(["汤姆", "猫"], ["▁Tom", "▁ca", "ts"],
                            np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6]], dtype=np.float32),
                            [[0, 1], [2]], [[0], [1], [1]], 2)
    reverse = np.array([[0.6, 0.3, 0.1],   # 汤姆 over ▁Tom ▁ca ts
                        [0.2, 0.5, 0.3]], dtype=np.float32)  # 猫
    both = BidirectionalAlignment(forward, reverse)
    np.testing.assert_allclose(both.reverse_unit_weights, [[0.6, 0.2], [0.4, 0.8]])  # (J, K)
    # forward argmax: Tom→汤姆, cats→猫 (mean of .8, .6); reverse: 汤姆→Tom, 猫→cats
    assert both.links("intersect") == {(0, 0), (1, 0), (2, 1)}  # 汤姆's link to both characters
    assert BidirectionalAlignment(forward, None).links() == set()


def test_unit_links_move_onto_the_words_that_cover_them():
    links = {(0, 0), (1, 0), (2, 2), (3, 1)}  # 汤 姆 → Tom; 喜 → cats; 欢 → likes
    assert unit_links_to_tokens(links, ["汤姆", "喜欢", "猫"], list("汤姆喜欢猫"),
                                ["Tom", "likes", "cats"], ["Tom", "likes", "cats"]) == {
        (0, 0), (1, 2), (1, 1)}


@pytest.fixture
def trained(smoke_config, tmp_path):
    """A random forward model over the tiny corpus's vocabularies (the run's best.pt), and a
    reverse one (vocabularies swapped)."""
    prepared = prepare(smoke_config)
    zh = Vocab.load(prepared.vocab("zh")).itos[4:]
    en = Vocab.load(prepared.vocab("en")).itos[4:]
    forward = write_random_checkpoint(smoke_config.run_dir / "checkpoints" / "best.pt",
                                      smoke_config, zh, en)
    reverse = replace(smoke_config, model=replace(smoke_config.model, direction="reverse"), seed=7)
    return smoke_config, forward, write_random_checkpoint(tmp_path / "reverse.pt", reverse, en, zh)


def with_rerank(config, *paths):
    return replace(config, eval=replace(config.eval, rerank=[str(p) for p in paths],
                                        rerank_weights=[0.0] * len(paths)))


GOLD = ("a\t汤 姆 喜 欢 猫 。\tTom likes cats .\t0-0 1-0 2-1 3-1 4-2 5-3\t\n"
        "b\t玛 丽 喜 欢 狗 。\tMary likes dogs .\t0-0 1-0 2-1 3-1 4-2 5-3\t2-0\n")




def test_the_script_aligns_from_both_directions_end_to_end(trained, tmp_path, monkeypatch, capsys):
    config, forward, reverse = trained
    gold = tmp_path / "gold.tsv"
    gold.write_text(GOLD, encoding="utf-8")
    args = [str(REPO / "configs" / "smoke.yaml"), f"data.corpus={config.data.corpus}",
            f"data.prepared_dir={config.data.prepared_dir}", f"runs_dir={config.runs_dir}",
            "training.device=cpu"]
    rerank = [f"eval.rerank=[{reverse}]", "eval.rerank_weights=[0.0]"]
    assert run_align_script(monkeypatch, *args, *rerank, "--gold", str(gold),
                       "--weights", "bidirectional") == 0
    assert "AER" in capsys.readouterr().out
    report = json.loads((config.run_dir / "alignment.json").read_text(encoding="utf-8"))
    assert (report["weights"], report["method"]) == ("bidirectional", DEFAULT_BIDIRECTIONAL_METHOD)
    assert report["reverse"] == str(reverse) and report["read"] == {"forward": "posterior",
                                                                    "reverse": "posterior"}
    written = (config.run_dir / "alignment.links.txt").read_text(encoding="utf-8").splitlines()
    expected = BidirectionalAligner.from_checkpoints([forward], reverse, device="cpu").align(
        read_gold(gold))
    assert written == [" ".join(f"{i}-{j}" for i, j in sorted(x)) for x in expected]
    assert all(written)

    # --reverse instead of eval.rerank; product; the soft matrices of both directions
    assert run_align_script(monkeypatch, *args, "--gold", str(gold), "--weights", "bidirectional",
                       "--reverse", str(reverse), "--method", "product") == 0
    report = json.loads((config.run_dir / "alignment.json").read_text(encoding="utf-8"))
    default = evaluation_key({"weights": "bidirectional", "method": DEFAULT_BIDIRECTIONAL_METHOD,
                              "threshold": DEFAULT_THRESHOLDS.get(DEFAULT_BIDIRECTIONAL_METHOD)})
    assert {default, "bidirectional product 0.25"} <= set(report["evaluations"])
    pairs, output, soft = tmp_path / "pairs.tsv", tmp_path / "pairs.links", tmp_path / "soft.jsonl"
    pairs.write_text("汤姆喜欢猫。\tTom likes cats.\n\n", encoding="utf-8")
    assert run_align_script(monkeypatch, *args, *rerank, "--input", str(pairs), "--output", str(output),
                       "--weights", "bidirectional-attention", "--method", "mean",
                       "--soft", str(soft)) == 0
    assert output.read_text(encoding="utf-8").split("\n")[1:] == ["", ""]
    record = json.loads(soft.read_text(encoding="utf-8").splitlines()[0])
    k, p = len(record["src_tokens"]), len(record["tgt_tokens"])
    assert np.shape(record["reverse_weights"]) == (k, p)
    assert np.shape(record["reverse_unit_weights"]) == (len(record["tgt_units"]), k)


def test_the_reverse_direction_is_the_reverse_model_teacher_forced_on_the_pair(trained):
    config, forward, reverse = trained
    pairs = parse_pairs(["汤姆喜欢猫。\tTom likes cats.", "玛丽有3本书。\tMary has 3 books."])
    aligner = BidirectionalAligner.from_checkpoints([forward], reverse, device="cpu")
    soft = aligner.soft(pairs, posterior=False)
    for pair in soft:
        f = pair.forward
        [alone] = forced_attention(aligner.reverse, [aligner.forward.tgt_vocab.encode(f.tgt_tokens)],
                                   [aligner.forward.src_vocab.encode(f.src_tokens)])
        assert alone.shape == (len(f.src_tokens), len(f.tgt_tokens))  # rows Chinese tokens
        np.testing.assert_allclose(pair.reverse_weights, alone, atol=1e-6)
        np.testing.assert_allclose(pair.reverse_unit_weights.sum(axis=0), 1.0, atol=1e-5)
    # the reverse direction matters: the intersection keeps only the forward links it agrees with
    only = [s.forward.links("argmax") for s in soft]
    assert all(s.links("intersect") <= o for s, o in zip(soft, only))
    assert aligner.read == {"forward": "attention", "reverse": "attention"}


def test_a_run_without_a_reverse_model_is_told_what_to_train(trained, tmp_path, monkeypatch, capsys):
    config, forward, reverse = trained
    pairs = parse_pairs(["汤姆喜欢猫。\tTom likes cats."])
    with pytest.raises(NMTError, match="train configs/tatoeba_reverse.yaml .* eval.rerank, or pass --reverse"):
        align(config, pairs, AlignOptions(weights="bidirectional"))
    # eval.rerank naming only forward models: named in the message
    right_to_left = replace(config, model=replace(config.model, target_order="right_to_left"))
    vocab = AttentionAligner.from_checkpoint(forward, device="cpu")
    r2l = write_random_checkpoint(tmp_path / "r2l.pt", right_to_left, vocab.src_vocab.itos[4:],
                                  vocab.tgt_vocab.itos[4:])
    with pytest.raises(NMTError, match=f"has none \\(eval.rerank names {r2l}\\)"):
        align(with_rerank(config, r2l), pairs, AlignOptions(weights="bidirectional"))
    with pytest.raises(NMTError, match="is a model.direction = forward model"):
        align(config, pairs, AlignOptions(weights="bidirectional", reverse=str(forward)))
    with pytest.raises(NMTError, match="--method product with --aligner attention.*--weights bidirectional"):
        AlignOptions(method="product", weights="attention").check()
    with pytest.raises(NMTError, match="--method argmax with --weights bidirectional"):
        AlignOptions(method="argmax", weights="bidirectional").check()
    with pytest.raises(NMTError, match="--reverse names the reverse model"):
        AlignOptions(reverse=str(reverse), weights="posterior").check()
    # the script: one line on stderr, exit status 2, no traceback
    args = [str(REPO / "configs" / "smoke.yaml"), f"data.corpus={config.data.corpus}",
            f"data.prepared_dir={config.data.prepared_dir}", f"runs_dir={config.runs_dir}",
            "training.device=cpu"]
    source = tmp_path / "pairs.tsv"
    source.write_text("汤姆喜欢猫。\tTom likes cats.\n", encoding="utf-8")
    assert run_align_script(monkeypatch, *args, "--input", str(source), "--weights", "bidirectional") == 2
    err = capsys.readouterr().err
    assert "training.channel_members: 1" in err and "Traceback" not in err


def test_a_reverse_model_with_other_vocabularies_is_refused(trained, tmp_path):
    config, forward, _ = trained
    reverse = replace(config, model=replace(config.model, direction="reverse"))
    foreign = write_random_checkpoint(tmp_path / "foreign.pt", reverse, TGT_WORDS, SRC_WORDS)
    with pytest.raises(NMTError, match="different source vocabularies"):
        BidirectionalAligner.from_checkpoints([forward], foreign, device="cpu")


def test_translator_align_uses_both_directions_when_the_run_has_a_reverse_model(trained):
    config, forward, reverse = trained
    zh, en = ["汤姆喜欢猫。", "玛丽喜欢狗。"], ["Tom likes cats.", "Mary likes dogs."]
    pairs = parse_pairs([f"{z}\t{e}" for z, e in zip(zh, en)])
    one = Translator.from_config(config, device="cpu")
    assert isinstance(aligner_of(one), AttentionAligner)
    alone = AttentionAligner.from_checkpoint(forward, device="cpu").soft(pairs, posterior=True)
    assert align_lines(one, zh, en) == [sorted(s.links("grow-diag-final-and")) for s in alone]

    translator = Translator.from_config(with_rerank(config, reverse), device="cpu")
    assert isinstance(aligner_of(translator), BidirectionalAligner)
    both = BidirectionalAligner.from_checkpoints([forward], reverse, device="cpu").soft(pairs)
    for method in (None, "product", "intersect"):
        assert align_lines(translator, zh, en, method) == [
            sorted(s.links(method or DEFAULT_BIDIRECTIONAL_METHOD)) for s in both]
    # a one-direction method reads the forward model alone
    assert align_lines(translator, zh, en, "argmax") == [sorted(s.links("argmax")) for s in alone]


def test_the_page_links_come_from_both_directions_when_the_run_has_a_reverse_model(
        smoke, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    reverse = write_random_checkpoint(
        tmp_path / "reverse.pt", replace(smoke, model=replace(smoke.model, direction="reverse")),
        TGT_WORDS, SRC_WORDS)
    for name, config in (("plain", smoke), ("both", with_rerank(smoke, reverse))):
        config = replace(config, name=name, runs_dir=str(runs),
                         training=replace(config.training, device="cpu"))
        (runs / name / "checkpoints").mkdir(parents=True)
        save_config(config, runs / name / "config.yaml")
        write_random_checkpoint(runs / name / "checkpoints" / "best.pt", config)
    registry = RunRegistry(runs, "plain", device="cpu")
    client = TestClient(create_app(registry, ServeConfig(max_chars=50)), raise_server_exceptions=False)
    combined = []
    real = bidirectional.combine
    monkeypatch.setattr(bidirectional, "combine",
                        lambda *args: combined.append(args[2]) or real(*args))

    plain = client.get("/api/translate", params={"text": "汤姆喜欢猫。", "run": "plain",
                                                 "links": "true"}).json()
    assert plain["links"] and not combined  # one model: its search attention's links

    body = client.get("/api/translate", params={"text": "汤姆喜欢猫。\n玛丽喜欢狗。",
                                                "run": "both", "links": "true"}).json()
    assert combined == [DEFAULT_BIDIRECTIONAL_METHOD] * 2
    translator = registry.get("both").translator
    for line in body["lines"]:
        pair = parse_pairs([f"{join_units(line['source_tokens'])}\t{line['translation']}"])[0]
        [units] = align_lines(translator, [pair.src_text], [pair.tgt_text])
        expected = unit_links_to_tokens(set(units), line["source_tokens"], pair.src_units,
                                        line["target_tokens"], pair.tgt_units)
        assert sorted(map(tuple, line["links"])) == sorted(expected)
        assert all(0 <= s < len(line["source_tokens"]) and 0 <= t < len(line["target_tokens"])
                   for s, t in line["links"])


def test_alignment_json_keeps_one_direction_rows_beside_those_of_one_reverse_model(tmp_path):
    path = tmp_path / "run" / "alignment.json"

    def evaluate(weights, method, reverse=None, **more):
        description = {"aligner": "attention", "attention": "additive", "weights": weights,
                       "method": method, "checkpoint": "best.pt", "step": 100, "layer": None,
                       "head": None, **({"reverse": reverse, "reverse_step": 5} if reverse else {}),
                       **more}
        scores = score_alignments([{(0, 0)}], [{(0, 0)}], [set()])
        return write_evaluation(path, "run", "gold.tsv", AlignResult([{(0, 0)}], None, description),
                                scores)

    evaluate("posterior", "grow-diag-final-and")
    evaluate("bidirectional", "product", "r1.pt", threshold=0.25)
    report = evaluate("bidirectional", "grow-diag-final-and", "r1.pt")
    assert list(report["evaluations"]) == ["posterior grow-diag-final-and",
                                           "bidirectional product 0.25",
                                           "bidirectional grow-diag-final-and"]
    assert report["evaluations"]["bidirectional product 0.25"]["reverse"] == "r1.pt"
    # another reverse model: the old bidirectional rows go, the one-direction row stays
    report = evaluate("bidirectional", "mean", "r2.pt", threshold=0.5)
    assert list(report["evaluations"]) == ["posterior grow-diag-final-and", "bidirectional mean 0.5"]
    assert list(evaluate("attention", "argmax")["evaluations"]) == [
        "posterior grow-diag-final-and", "bidirectional mean 0.5", "attention argmax"]
