"""The CTranslate2 export (nmt/export): a small Transformer, trained a few dozen steps on a copy
task so that its outputs are not degenerate, searches the same in CT2 as in PyTorch."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("ctranslate2")

from helpers import REPO  # noqa: E402
from nmt.config.loader import load_config  # noqa: E402
from nmt.config.schema import ModelConfig, SearchConfig  # noqa: E402
from nmt.data.vocab import BOS_ID, EOS_ID, PAD_ID, SPECIALS, Vocab  # noqa: E402
from nmt.decoding.translate import decode_ids  # noqa: E402
from nmt.errors import NMTError  # noqa: E402
from nmt.export.ctranslate2_spec import write_engine_folder  # noqa: E402
from nmt.decoding.engine_search import EngineSearch  # noqa: E402
from nmt.model import build_model  # noqa: E402
from random_checkpoint import single_thread  # noqa: E402

SRC_VOCAB = Vocab(SPECIALS + [f"汉{i}" for i in range(16)])
TGT_VOCAB = Vocab(SPECIALS + [f"w{i}" for i in range(16)])
FIRST, LAST = len(SPECIALS), len(SPECIALS) + 15  # the word ids, the same on both sides


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def small_config(**changes) -> ModelConfig:
    """configs/smoke_transformer.yaml's tiny Transformer (d 32, 2 heads, 1 + 1 layers), no
    dropout, with `changes` (model.transformer keys) laid over it."""
    model = load_config(REPO / "configs" / "smoke_transformer.yaml").model
    return dataclasses.replace(model, dropout=0.0,
                               transformer=dataclasses.replace(model.transformer, **changes))


def sentences(n: int, seed: int, longest: int = 9) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randint(FIRST, LAST) for _ in range(rng.randint(1, longest))] for _ in range(n)]


def trained(config: ModelConfig, steps: int = 80, seed: int = 0) -> torch.nn.Module:
    """A model taught to copy its source (same ids on both sides), `steps` Adam updates."""
    torch.manual_seed(seed)
    model = build_model(config, len(SRC_VOCAB), len(TGT_VOCAB))
    optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
    for step in range(steps):
        batch = sentences(32, seed=1000 + step)
        width = max(map(len, batch))
        src = torch.tensor([ids + [PAD_ID] * (width - len(ids)) for ids in batch])  # (B, S)
        tgt = torch.tensor([[BOS_ID] + ids + [EOS_ID] + [PAD_ID] * (width - len(ids))
                            for ids in batch])  # (B, S + 2)
        logits, _ = model(src, (src != PAD_ID).sum(1), tgt[:, :-1])  # (B, S + 1, V)
        loss = F.cross_entropy(logits.transpose(1, 2), tgt[:, 1:], ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    # <pad> and <s>, never targets, end with next to no probability in a model trained for
    # long; 80 steps leave them ~0.5% a step, which CT2 takes out of its softmax (it masks
    # them before, ours after it) and which then reorders near-tied beam candidates.
    with torch.no_grad():
        model.output_layer.bias[[PAD_ID, BOS_ID]] = -30.0
    return model.eval()


def export(model, folder: Path, quantization: str = "float32") -> Path:
    folder.mkdir()
    write_engine_folder(model, SRC_VOCAB, TGT_VOCAB, folder, quantization)
    return folder


@pytest.fixture(scope="module")
def copier(tmp_path_factory):
    """The trained pre-norm model and its float32 CT2 folder."""
    with single_thread():
        model = trained(small_config())
    return model, export(model, tmp_path_factory.mktemp("ct2") / "float32")


SOURCES = sentences(20, seed=7, longest=12) + [[]]  # longer than trained ones, and an empty one


def both(model, folder: Path, search: SearchConfig, sources=SOURCES):
    ours = decode_ids(model, sources, search, device="cpu", keep_attention=True)
    engine = EngineSearch(folder, threads=1).search(sources, search, SRC_VOCAB, TGT_VOCAB,
                                                     keep_attention=True)
    return ours, engine


def search_config(**settings) -> SearchConfig:
    return SearchConfig(**{"batch_size": 8, "workers": 1, "bf16": False, **settings})


@pytest.mark.parametrize("settings", [
    dict(beam_size=1, length_penalty=0.6),
    dict(beam_size=4, stop="beam_full", length_penalty=0.0),
    dict(beam_size=4, stop="beam_full", length_penalty=1.0, n_best=2),
    dict(beam_size=4, stop="best_ended", length_penalty=0.0, n_best=2),
    dict(beam_size=4, stop="best_ended", length_penalty=0.6),
])
def test_engine_search_equals_ours(copier, settings):
    model, folder = copier
    ours, engine = both(model, folder, search_config(**settings))
    assert len(ours) == len(engine) == len(SOURCES)
    assert engine[-1] == [ours[-1][0]]  # the empty source: one empty hypothesis
    # the model has learnt something: some exact copies, outputs of many lengths
    assert sum(o[0].tokens == ids for o, ids in zip(ours, SOURCES)) >= 5
    assert len({len(o[0].tokens) for o in ours}) >= 5
    for mine, theirs in zip(ours, engine):
        assert [h.tokens for h in theirs] == [h.tokens for h in mine]
        for o, e in zip(mine, theirs):
            assert e.ended == o.ended
            assert e.score == pytest.approx(o.score, abs=1e-4)
            assert e.log_prob == pytest.approx(o.log_prob, abs=1e-4)
            if o.attention is None:  # the empty source
                assert e.attention is None
                continue
            # Ours: len(tokens) + 1 rows when ended (the </s> step), the engine's the same.
            assert e.attention.shape == o.attention.shape == (len(o.tokens) + o.ended, e.attention.shape[1])
            np.testing.assert_allclose(e.attention, o.attention, atol=1e-3)


def test_the_engines_own_scores_choose_as_ours(copier):
    """Without rescoring (what EngineTranslator searches with) the log-probabilities are the
    engine's, renormalized over the allowed tokens: higher where a forbidden token was likely
    (</s> first, which this small model often wants), the same best translation."""
    model, folder = copier
    search = search_config(beam_size=4, stop="best_ended", length_penalty=0.6, n_best=2)
    ours = decode_ids(model, SOURCES, search, device="cpu", keep_attention=False)
    engine = EngineSearch(folder, threads=1, exact_scores=False).search(
        SOURCES, search, SRC_VOCAB, TGT_VOCAB, keep_attention=False)
    assert [hyps[0].tokens for hyps in engine] == [hyps[0].tokens for hyps in ours]
    best = [(mine[0], theirs[0]) for mine, theirs in zip(ours[:-1], engine)]
    assert all(e.log_prob >= o.log_prob - 1e-4 for o, e in best)
    assert any(e.log_prob > o.log_prob + 1e-3 for o, e in best)  # not rescored: the engine's


def test_the_length_limit_is_ours_per_sentence(copier):
    """A ratio that cuts the longer outputs: ours and the engine's end at the same step, each
    sentence at its own limit, ceil(0.1 × source length) + 10 steps."""
    model, folder = copier
    ours, engine = both(model, folder, search_config(beam_size=1, max_length_ratio=0.1,
                                                     batch_size=16))
    assert [h[0].tokens for h in engine] == [h[0].tokens for h in ours]
    assert [h[0].ended for h in engine] == [h[0].ended for h in ours]
    cut = [(len(h[0].tokens), len(ids)) for h, ids in zip(engine, SOURCES) if not h[0].ended]
    assert len(cut) >= 2 and all(n == math.ceil(0.1 * length) + 10 for n, length in cut)


def test_int8_mostly_agrees_with_float32_and_leaves_the_model_alone(copier, tmp_path):
    model, folder = copier
    before = {k: v.clone() for k, v in model.state_dict().items()}
    int8 = export(model, tmp_path / "int8", "int8")
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    assert (int8 / "model.bin").stat().st_size < (folder / "model.bin").stat().st_size
    search = search_config(beam_size=4)

    def outputs(folder: Path, compute_type: str) -> list[list[int]]:
        found = EngineSearch(folder, compute_type, threads=1).search(
            SOURCES, search, SRC_VOCAB, TGT_VOCAB, keep_attention=False)
        assert all(hyps[0].attention is None for hyps in found)
        return [hyps[0].tokens for hyps in found]

    reference = outputs(folder, "default")
    # The int8 weights the export wrote, run in float32: 17-20 of 20 sentences measured.
    same = sum(a == b for a, b in zip(reference, outputs(int8, "float32")))
    assert same >= 0.8 * len(SOURCES), f"int8 weights agree with float32 on {same}/{len(SOURCES)}"
    # With int8 matrix products too, the backend decides: 17-20 of 20 with MKL's
    # (CT2_USE_MKL=1), 7-12 with oneDNN's, CT2's choice on an AMD CPU, whose u8s8 products
    # saturate on AVX2 without VNNI. A broken export agrees on next to none.
    same = sum(a == b for a, b in zip(reference, outputs(int8, "default")))
    assert same >= 0.3 * len(SOURCES), f"int8 agrees with float32 on {same}/{len(SOURCES)}"


@pytest.mark.parametrize("changes", [dict(norm="post"), dict(positions="learned", max_positions=6)])
def test_post_norm_and_learned_positions_convert(changes, tmp_path):
    """CT2's log-probabilities of given outputs (teacher forcing) equal ours, past the learned
    table's 6 rows too (ours reuse its last row)."""
    torch.manual_seed(0)
    model = build_model(small_config(**changes), len(SRC_VOCAB), len(TGT_VOCAB)).eval()
    folder = export(model, tmp_path / "engine")
    src, tgt = list(range(FIRST, FIRST + 9)), list(range(LAST, LAST - 8, -1))  # 9 + 1 positions
    scored = EngineSearch(folder, threads=1).translator.score_batch(
        [[SRC_VOCAB.itos[i] for i in src]], [[TGT_VOCAB.itos[i] for i in tgt]])[0]
    with torch.no_grad():
        logits, _ = model(torch.tensor([src]), torch.tensor([len(src)]),
                          torch.tensor([[BOS_ID] + tgt]))  # (1, T, V)
    ours = logits[0].log_softmax(-1).gather(1, torch.tensor([tgt + [EOS_ID]]).T)[:, 0]  # (T,)
    np.testing.assert_allclose(scored.log_probs, ours.numpy(), atol=1e-4)


def test_what_cannot_be_exported_or_loaded_says_why(tmp_path):
    smoke = load_config(REPO / "configs" / "smoke.yaml").model  # the recurrent family
    recurrent = build_model(smoke, len(SRC_VOCAB), len(TGT_VOCAB))
    (tmp_path / "out").mkdir()
    with pytest.raises(NMTError, match="only a Transformer"):
        write_engine_folder(recurrent, SRC_VOCAB, TGT_VOCAB, tmp_path / "out", "float32")
    for shared, message in [(dict(target_order="right_to_left"), "right_to_left"),
                            (dict(direction="reverse"), "reverse")]:
        model = build_model(dataclasses.replace(small_config(), **shared), len(SRC_VOCAB),
                            len(TGT_VOCAB))
        with pytest.raises(NMTError, match=message):
            write_engine_folder(model, SRC_VOCAB, TGT_VOCAB, tmp_path / "out", "float32")
    model = build_model(small_config(), len(SRC_VOCAB), len(TGT_VOCAB))
    with pytest.raises(NMTError, match="not one CTranslate2 offers"):
        write_engine_folder(model, SRC_VOCAB, TGT_VOCAB, tmp_path / "out", "int3")
    with pytest.raises(NMTError, match="vocabularies"):
        write_engine_folder(model, TGT_VOCAB, Vocab(SPECIALS), tmp_path / "out", "float32")
    folder = export(model, tmp_path / "engine")
    with pytest.raises(NMTError, match="empty folder"):
        write_engine_folder(model, SRC_VOCAB, TGT_VOCAB, folder, "float32")
    with pytest.raises(NMTError, match="no such"):
        EngineSearch(tmp_path / "missing")
    (folder / "model.bin").unlink()
    with pytest.raises(NMTError, match=str(folder)):
        EngineSearch(folder)


def test_progress_counts_every_searched_sentence(copier):
    model, folder = copier
    seen: list[int] = []
    EngineSearch(folder, threads=1).search(SOURCES, search_config(beam_size=2, batch_size=4),
                                           SRC_VOCAB, TGT_VOCAB, False, progress=seen.append)
    assert sum(seen) == len(SOURCES) - 1 and max(seen) <= 4  # the empty one is not searched


def test_batches_searched_side_by_side_give_the_same_hypotheses(copier):
    """workers=2: CT2 searches two batches at once (inter_threads), one thread each."""
    model, folder = copier
    search = search_config(beam_size=3, batch_size=4)
    one = EngineSearch(folder, threads=1).search(SOURCES, search, SRC_VOCAB, TGT_VOCAB, True)
    threads = torch.get_num_threads()
    engine = EngineSearch(folder, threads=2, workers=2)
    assert torch.get_num_threads() == threads  # CT2 set them to 1 for this thread: given back
    assert engine.translator.num_translators == 2
    two = engine.search(SOURCES, search, SRC_VOCAB, TGT_VOCAB, True)
    assert [[(h.tokens, h.score) for h in hyps] for hyps in two] == \
           [[(h.tokens, h.score) for h in hyps] for hyps in one]
    assert all(np.array_equal(a.attention, b.attention) for x, y in zip(one[:-1], two)
               for a, b in zip(x, y))
