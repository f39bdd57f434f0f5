"""Alignment with a model: forced decoding reads the attention training and search compute, the
align script writes one line per pair, and eflomal (when installed) aligns a tiny corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import run_align_script, REPO, as_family
from nmt.align.aligner import AttentionAligner
from nmt.align.forced import forced_attention
from nmt.align.links import parse_pairs, read_pairs
from nmt.align.translated import align_lines
from nmt.align.stage import AlignOptions, align
from nmt.align.statistical import align_with_eflomal, characters
from nmt.data.vocab import BOS_ID
from nmt.decoding.translate import translate_token_ids
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.model import build_model
from nmt.model.ensemble import Ensemble



@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


@pytest.mark.parametrize("query", ["previous", "current"])
def test_forced_decoding_is_the_attention_of_training_and_of_search(smoke, query):
    torch.manual_seed(0)
    model = build_model(as_family(smoke.model, attention_query=query), 12, 10)
    src = [[4, 5, 6], [7, 8, 9, 10, 11], [4]]
    tgt = [[4, 5], [6, 7, 8, 9], [5, 5, 5]]
    model.train()  # forced decoding must switch dropout off itself
    forced = forced_attention(model, src, tgt, batch_size=2)
    assert model.training
    model.eval()
    for s, t, weights in zip(src, tgt, forced):
        # Training's call on this pair alone (no padding): row i predicted t[i]; the </s> row goes.
        _, full = model(torch.tensor([s]), torch.tensor([len(s)]), torch.tensor([[BOS_ID] + t]))
        assert weights.shape == (len(t), len(s))
        np.testing.assert_allclose(weights, full[0, : len(t)].detach().numpy(), atol=1e-5)
    # Search keeps the attention of each step; forcing its own output gives the same rows.
    greedy = replace(smoke.search, beam_size=1, n_best=1, max_length_ratio=1.0)
    hypotheses = translate_token_ids(model, src, greedy, keep_attention=True)
    outputs = [[int(x) for x in h.tokens] for h in hypotheses]
    refound = forced_attention(model, src, outputs)
    for hyp, weights, out in zip(hypotheses, refound, outputs):
        if out:
            np.testing.assert_allclose(weights, hyp.attention[: len(out)], atol=1e-5)
    assert forced_attention(model, [[4], []], [[], [5]]) == [None, None]


def _step_by_step_log_probs(model, src, src_lengths, tgt_in):
    """(T, V) teacher-forced log-probabilities of one pair, one decoder step (one _attend) at a time."""
    memory = model.encode(src, src_lengths)
    state, rows = model.init_state(memory), []
    for t in range(tgt_in.size(1)):
        log_probs, state, _ = model.decode_step(tgt_in[:, t], state, memory)
        rows.append(log_probs[0])
    return torch.stack(rows)


@pytest.mark.parametrize("query,input_feeding,rnn", [("previous", True, "gru"), ("current", True, "gru"),
                                                     ("current", False, "lstm"), ("previous", False, "lstm")])
def test_posterior_alignment_is_bayes_rule_over_the_attention(smoke, monkeypatch, query,
                                                              input_feeding, rnn):
    """P(j | y_i) ∝ a_ij p(y_i | c_i = h_j): brute force, one forward pass per (i, j) with the
    attention of step i replaced by a one-hot at j (and every other step as it was)."""
    torch.manual_seed(0)
    model = build_model(as_family(smoke.model, attention_query=query, input_feeding=input_feeding,
                                  cell=rnn), 12, 10).eval()
    src, tgt = [4, 5, 6, 7], [4, 5, 6]
    s, s_len, t_in = torch.tensor([src]), torch.tensor([len(src)]), torch.tensor([[BOS_ID] + tgt])
    _, attention = model(s, s_len, t_in)  # (1, T, S)
    decoder, original = model.decoder, model.decoder._attend
    likelihood = torch.zeros(len(tgt), len(src))
    for i in range(len(tgt)):
        for j in range(len(src)):
            calls = []

            def attend(query, memory, i=i, j=j, calls=calls):
                calls.append(None)
                if len(calls) - 1 != i:
                    return original(query, memory)
                onehot = torch.zeros(1, len(src))
                onehot[0, j] = 1.0
                return memory.values[:, j], onehot

            monkeypatch.setattr(decoder, "_attend", attend)
            likelihood[i, j] = _step_by_step_log_probs(model, s, s_len, t_in)[i, tgt[i]]
    monkeypatch.setattr(decoder, "_attend", original)
    expected = torch.softmax(attention[0, : len(tgt)].log() + likelihood, dim=-1).detach()

    posterior = forced_attention(model, [src], [tgt], posterior=True)[0]
    np.testing.assert_allclose(posterior, expected.numpy(), atol=1e-5)
    np.testing.assert_allclose(posterior.sum(axis=1), 1.0, atol=1e-5)
    assert not np.allclose(posterior, attention[0, : len(tgt)].detach().numpy(), atol=1e-3)
    # In a padded batch the posterior of a pair is its own: nothing on the padding.
    batched = forced_attention(model, [src, [4, 5]], [tgt, [4, 5, 6, 7]], posterior=True)
    np.testing.assert_allclose(batched[0], posterior, atol=1e-5)
    assert batched[1].shape == (4, 2)
    np.testing.assert_allclose(batched[1].sum(axis=1), 1.0, atol=1e-5)


def test_posterior_alignment_needs_a_recurrent_model_with_attention(smoke):
    src, tgt = [[4, 5, 6]], [[4, 5]]
    transformer = build_model(as_family(smoke.model, "transformer"), 12, 10)
    with pytest.raises(NMTError, match="--weights posterior needs a recurrent model"):
        forced_attention(transformer, src, tgt, posterior=True)
    rnn = build_model(smoke.model, 12, 10)
    with pytest.raises(NMTError, match="do not go with --weights posterior"):
        forced_attention(rnn, src, tgt, layer=0, posterior=True)
    with pytest.raises(NMTError, match="every member of an ensemble"):
        forced_attention(Ensemble([rnn, transformer]), src, tgt, posterior=True)
    flat = build_model(as_family(smoke.model, attention="none"), 12, 10)
    assert forced_attention(flat, src, tgt, posterior=True) == [None]


def test_a_chosen_layer_and_head_of_a_transformer(smoke):
    torch.manual_seed(0)
    config = as_family(smoke.model, "transformer", encoder_layers=2, decoder_layers=2)
    model = build_model(config, 12, 10).eval()
    src, tgt = [[4, 5, 6], [7, 8, 9, 10, 11]], [[4, 5], [6, 7, 8, 9]]
    own = forced_attention(model, src, tgt)  # the alignment layer (the last), heads averaged
    last = forced_attention(model, src, tgt, layer=-1)
    first = forced_attention(model, src, tgt, layer=0)
    heads = [forced_attention(model, src, tgt, layer=1, head=h) for h in range(config.transformer.heads)]
    for i in range(len(src)):
        np.testing.assert_allclose(own[i], last[i], atol=1e-6)
        np.testing.assert_allclose(np.mean([h[i] for h in heads], axis=0), own[i], atol=1e-6)
        assert not np.allclose(first[i], own[i]) and not np.allclose(heads[0][i], own[i])
        np.testing.assert_allclose(heads[0][i].sum(axis=1), 1.0, atol=1e-5)
    with pytest.raises(NMTError, match="--layer 2: the model has 2 decoder layer"):
        forced_attention(model, src, tgt, layer=2)
    with pytest.raises(NMTError, match="--head 9"):
        forced_attention(model, src, tgt, head=9)
    # A recurrent model answers as one layer with one head.
    rnn = build_model(smoke.model, 12, 10).eval()
    np.testing.assert_allclose(forced_attention(rnn, src, tgt, layer=0, head=0)[1],
                               forced_attention(rnn, src, tgt)[1], atol=1e-6)


def test_a_run_with_members_aligns_as_the_ensemble_make_eval_scores(smoke):
    config = replace(smoke, training=replace(smoke.training, members=2))
    first = write_random_checkpoint(config.run_dir / "checkpoints" / "best.pt", config)
    second = write_random_checkpoint(config.run_dir / "member2" / "checkpoints" / "best.pt",
                                     replace(config, seed=99))
    pairs = parse_pairs(["汤姆喜欢猫。\tTom likes cats.", "玛丽喜欢狗。\tMary likes dogs."])
    for weights in ("attention", "posterior"):  # the members' mean of each
        result = align(config, pairs, AlignOptions(weights=weights))
        assert result.description["checkpoint"] == f"{first},{second}"
        alone = [AttentionAligner.from_checkpoint(path, device="cpu").soft(
            pairs, posterior=weights == "posterior") for path in (first, second)]
        for ours, a, b in zip(result.soft, *alone, strict=True):
            np.testing.assert_allclose(ours.weights, (a.weights + b.weights) / 2, atol=1e-6)
            assert not np.allclose(a.weights, b.weights, atol=1e-3)
    assert align(config, pairs, AlignOptions(checkpoint=str(second))).description["checkpoint"] \
        == str(second)
    with pytest.raises(NMTError, match="--layer and --head pick a head of one model"):
        align(config, pairs, AlignOptions(layer=0))
    # The Python API's align_lines with a Translator reads the ensemble's posterior the same way.
    translator = Translator.from_checkpoints([first, second], device="cpu")
    expected = AttentionAligner.from_checkpoints([first, second], device="cpu").soft(
        pairs, posterior=True)
    assert align_lines(translator, ["汤姆喜欢猫。", "玛丽喜欢狗。"], ["Tom likes cats.", "Mary likes dogs."]) \
        == [sorted(soft.links("grow-diag-final-and")) for soft in expected]


def test_pairs_split_at_newlines_only(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes("汤姆\r喜欢猫。\tTom likes cats.\r\n我们\u2028想要茶。\tWe want tea.\n".encode())
    pairs = read_pairs(path)
    assert len(pairs) == 2 and pairs[0].tgt_text == "Tom likes cats."


def test_aligner_units_and_no_attention(tmp_path, smoke):
    checkpoint = write_random_checkpoint(tmp_path / "best.pt", smoke)
    aligner = AttentionAligner.from_checkpoint(checkpoint, device="cpu")
    pairs = parse_pairs(["汤姆喜欢猫。\tTom likes cats.", "", "猫\t"])
    soft = aligner.soft(pairs)
    assert soft[0].src_tokens == ["汤姆", "喜欢", "猫", "。"]  # jieba words, as in training
    assert soft[0].src_cover == [[0, 1], [2, 3], [4], [5]]
    assert soft[0].weights.shape == (4, 4) and soft[0].unit_weights.shape == (4, 4)
    links = soft[0].links("argmax")
    assert len({j for _, j in links}) == 4  # every English token linked ...
    assert all(i in range(6) for i, _ in links)  # ... to Chinese characters
    assert soft[1].links() == set() and soft[2].links() == set()

    none = replace(smoke, model=as_family(smoke.model, attention="none"))
    flat = write_random_checkpoint(tmp_path / "none.pt", none)
    assert AttentionAligner.from_checkpoint(flat, device="cpu").align(pairs) == [set(), set(), set()]


def _align(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "scripts" / "align.py"), *args],
                          capture_output=True, text=True, check=False, encoding="utf-8",
                          timeout=120, cwd=REPO)




@pytest.mark.e2e
def test_script_one_line_per_pair_gold_scores_and_bad_lines(tmp_path, smoke, monkeypatch, capsys):
    write_random_checkpoint(smoke.run_dir / "checkpoints" / "best.pt", smoke)
    config = [str(REPO / "configs" / "smoke.yaml"), f"runs_dir={smoke.runs_dir}", "training.device=cpu"]
    source, output, soft = tmp_path / "pairs.tsv", tmp_path / "pairs.links", tmp_path / "soft.jsonl"
    source.write_text("汤姆喜欢猫。\tTom likes cats.\n\n玛丽喜欢狗。\tMary likes dogs.\n", encoding="utf-8")
    done = _align(*config, "--input", str(source), "--output", str(output), "--soft", str(soft),
                  "--method", "grow-diag-final-and")
    assert done.returncode == 0, done.stderr
    lines = output.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 3 + 1 and lines[1] == "" and lines[0] and lines[2]
    records = [json.loads(line) for line in soft.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 3 and records[0]["src_units"] == list("汤姆喜欢猫。")

    gold = tmp_path / "gold.tsv"
    gold.write_text("a\t汤 姆 喜 欢 猫 。\tTom likes cats .\t0-0 1-0 2-1 3-1 4-2 5-3\t\n"
                    "b\t玛 丽 喜 欢 狗 。\tMary likes dogs .\t0-0 1-0 2-1 3-1 4-2 5-3\t2-0\n",
                    encoding="utf-8")
    assert run_align_script(monkeypatch, *config, "--gold", str(gold)) == 0
    assert "AER" in capsys.readouterr().out
    report = json.loads((smoke.run_dir / "alignment.json").read_text(encoding="utf-8"))
    assert report["pairs"] == 2 and 0.0 <= report["aer"] <= 1.0
    # no --weights: the run's best measured, for a recurrent model without a channel model
    assert (report["weights"], report["method"]) == ("posterior", "grow-diag-final-and")
    assert report["counts"]["sure"] == 12 and report["counts"]["predicted"] >= 8
    assert len((smoke.run_dir / "alignment.links.txt").read_text().splitlines()) == 2
    assert run_align_script(monkeypatch, *config, "--gold", str(gold), "--weights", "posterior",
                       "--method", "grow-diag-final-and") == 0
    assert "AER" in capsys.readouterr().out
    report = json.loads((smoke.run_dir / "alignment.json").read_text(encoding="utf-8"))
    assert report["weights"] == "posterior" and report["method"] == "grow-diag-final-and"
    assert run_align_script(monkeypatch, *config, "--gold", str(gold), "--aligner", "eflomal",
                       "--weights", "posterior") == 2
    assert "--weights posterior reads a model's attention" in capsys.readouterr().err

    bad = tmp_path / "bad.tsv"
    bad.write_text("汤姆喜欢猫。\tTom likes cats.\n玛丽喜欢狗。 Mary likes dogs.\n", encoding="utf-8")
    assert run_align_script(monkeypatch, *config, "--input", str(bad), "--output",
                       str(tmp_path / "bad.links")) == 2
    assert f"{bad}:2" in capsys.readouterr().err and not (tmp_path / "bad.links").exists()


def test_eflomal_aligns_a_tiny_corpus():
    pytest.importorskip("eflomal", reason="eflomal is installed by `make setup`")
    assert characters(["汤姆", "有", "3", "DVD"]) == ["汤", "姆", "有", "3", "DVD"]
    words = {"汤姆": "Tom", "玛丽": "Mary", "猫": "cats", "狗": "dogs", "书": "books", "茶": "tea",
             "喜欢": "likes", "需要": "needs", "买": "buys"}
    train_zh, train_en = [], []
    for n in ["汤姆", "玛丽"]:
        for v in ["喜欢", "需要", "买"]:
            for t in ["猫", "狗", "书", "茶"]:
                train_zh.append([n, v, t, "。"])
                train_en.append([words[n], words[v], words[t], "."])
    pairs = parse_pairs(["x\t玛 丽 喜 欢 茶 。\tMary likes tea .\t0-0 1-0 2-1 3-1 4-2 5-3\t"])
    [links] = align_with_eflomal(pairs, train_zh * 3, train_en * 3, units="char")
    # 玛 and 丽 (喜 and 欢) always come together: eflomal, which samples without a seed, links
    # "Mary" ("likes") to one of them or to both, and at times one across, from run to run.
    assert {(4, 2), (5, 3)} <= links and len(links - pairs[0].sure) <= 1
    assert links & {(0, 0), (1, 0)} and links & {(2, 1), (3, 1)}


@pytest.mark.parametrize("architecture, attention", [("rnn", "additive"), ("transformer", "4-head")])
def test_alignment_json_names_the_attention_as_the_results_table_does(smoke, architecture,
                                                                      attention):
    heads = {"heads": 4} if architecture == "transformer" else {}
    config = replace(smoke, model=as_family(smoke.model, architecture, **heads))
    write_random_checkpoint(config.run_dir / "checkpoints" / "best.pt", config)
    pairs = parse_pairs(["汤姆喜欢猫。\tTom likes cats."])
    result = align(config, pairs, AlignOptions())
    assert result.description["attention"] == attention and len(result.links) == 1
