"""training.members: models of one recipe trained side by side and decoded as an ensemble."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from nmt.checkpoints.choose import choose_checkpoints, load_chosen
from nmt.checkpoints.file import load_checkpoint
from nmt.config.loader import load_config
from nmt.decoding.translator import Translator
from nmt.errors import NMTError
from nmt.decoding.plan import plan_for
from nmt.evaluation.evaluate import evaluate
from nmt.model.ensemble import Ensemble
from nmt.training.loop import train
from nmt.training.members import member_configs, member_run_dirs


def with_members(config, members: int, **training):
    return replace(config, training=replace(config.training, members=members, **training))


def test_each_member_is_a_run_of_its_own_with_its_own_seed(smoke):
    config = with_members(smoke, 3, threads=0)
    members = member_configs(config)
    assert [m.run_dir for m in members] == member_run_dirs(config) == [
        smoke.run_dir, smoke.run_dir / "member2", smoke.run_dir / "member3"]
    assert [m.seed for m in members] == [smoke.seed, smoke.seed + 1, smoke.seed + 2]
    assert [m.training.members for m in members] == [3, 1, 1]  # member 1's config names them all
    assert len({m.training.threads for m in members}) == 1 and members[0].training.threads >= 1
    assert [m.training.threads for m in member_configs(with_members(smoke, 2, threads=3))] == [3, 3]


@pytest.mark.e2e
def test_members_train_side_by_side_and_make_eval_decodes_their_ensemble(smoke_config):
    config = with_members(smoke_config, 2, max_steps=20, keep_checkpoints=2)
    config = replace(config, eval=replace(config.eval, average="last:2"))
    run_dir = train(config, command="python scripts/train.py smoke")

    member2 = run_dir / "member2"
    for folder in (run_dir, member2):
        summary = json.loads((folder / "train_summary.json").read_text())
        assert summary["finished"] and summary["step"] == 20 and summary["threads"] == 1
        assert "python scripts/train.py smoke" in (folder / "commands.txt").read_text()
    member_log = (member2 / "train.log").read_bytes()
    assert b"step 20" in member_log  # the member's log, not the console
    assert b"\r" not in member_log  # log lines, not a progress bar's redrawing
    first, second = (load_checkpoint(f / "checkpoints" / "last.pt") for f in (run_dir, member2))
    assert second["config"]["seed"] == first["config"]["seed"] + 1
    assert not torch.equal(next(iter(first["model"].values())),
                           next(iter(second["model"].values())))  # two different models

    plan = plan_for(config)  # the averaging step writes each member's average, then it chooses
    chosen = choose_checkpoints(config)
    assert chosen.label == plan.label == "ensemble.average_last2"
    assert chosen.paths == list(plan.checkpoints) == [run_dir / "checkpoints" / "average_last2.pt",
                                                      member2 / "checkpoints" / "average_last2.pt"]
    assert isinstance(load_chosen(chosen.paths, "cpu").model, Ensemble)
    results = evaluate(plan)
    assert results["checkpoints"] == [str(p) for p in chosen.paths]
    assert (run_dir / "results.ensemble.average_last2.json").is_file()
    # make translate and make serve (a run folder) decode the same ensemble, attention included
    translator = Translator.from_run(run_dir)
    assert isinstance(translator.model, Ensemble)
    translation = translator.translate(["汤姆喜欢猫。"])[0]
    assert translation.attention is not None and translation.attention.shape[0] >= 1

    # rerunning the command resumes every member, which end at once: their steps are spent,
    # and when they ended stays when they trained (make report spans the members' wall clock)
    summary_path = run_dir / "train_summary.json"
    summary = json.loads(summary_path.read_text()) | {"ended_at": "2026-01-01T00:00:00Z"}
    summary_path.write_text(json.dumps(summary))
    train(config)
    assert load_checkpoint(member2 / "checkpoints" / "last.pt")["progress"]["step"] == 20
    rerun = json.loads(summary_path.read_text())
    assert rerun["ended_at"] == "2026-01-01T00:00:00Z" and rerun["spans"] == summary["spans"]
    # the run folder is member 1's, and it belongs to an experiment of 2 members
    with pytest.raises(NMTError, match="differs in: training.members"):
        train(with_members(config, 1))


def test_members_must_be_positive(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("training:\n  members: 0\n", encoding="utf-8")
    with pytest.raises(NMTError, match=r"exp\.yaml: training\.members = 0"):
        load_config(path)


def test_channel_members_train_after_the_translating_ones_and_rerank_them(tmp_path):
    """training.channel_members: models trained English → Chinese after the training.members
    translating ones; the plan's ensemble is the translating members, its rescoring models
    eval.rerank's, then the channel members' with eval.channel_weight."""
    from random_checkpoint import write_random_checkpoint

    from helpers import REPO
    from nmt.checkpoints.manifest import channel_run_dirs, translating_run_dirs
    from nmt.config.loader import build_saved_config

    smoke = REPO / "configs" / "smoke.yaml"
    config = load_config(smoke, [f"runs_dir={tmp_path}", "training.members=2",
                                 "training.channel_members=1", "eval.channel_weight=0.1"])
    members = member_configs(config)
    assert [member.model.direction for member in members] == ["forward", "forward", "reverse"]
    assert [d.name for d in translating_run_dirs(config)] == ["smoke", "member2"]
    assert [d.name for d in channel_run_dirs(config)] == ["member3"]
    paths = [write_random_checkpoint(m.run_dir / "checkpoints" / "best.pt", m) for m in members]
    plan = plan_for(config)
    assert plan.checkpoints == tuple(paths[:2]) and plan.label == "ensemble.rerank"
    assert [(m.path, m.weight, m.channel) for m in plan.rescoring] == [(paths[2], 0.1, True)]
    # one key turns the channel reranking off, in training or in decoding
    for off in ("training.channel_members=0", "eval.channel_weight=0"):
        plain = plan_for(load_config(smoke, [f"runs_dir={tmp_path}", "training.members=2",
                                             "training.channel_members=1", off]))
        assert plain.rescoring == () and plain.label == "ensemble"
    # an old run's saved config, which counted its reverse members among training.members
    old = build_saved_config({"training": {"members": 3, "reverse_members": 1},
                              "eval": {"rerank_weights": [0.2]}}, "config.yaml")
    assert (old.training.members, old.training.channel_members, old.eval.channel_weight,
            old.eval.rerank_weights) == (2, 1, 0.2, [])
    # ... is refused where a user writes it, saying what to write instead
    with pytest.raises(NMTError, match=r"training.reverse_members is now training.channel_members"
                                       r".*training.members: 2, training.channel_members: 1"):
        load_config(smoke, ["training.members=3", "training.reverse_members=1"])
    with pytest.raises(NMTError, match="training.channel_members trains reverse models"):
        load_config(smoke, ["training.channel_members=1", "model.direction=reverse"])


@pytest.mark.e2e
def test_a_channel_member_trains_beside_the_translating_one_and_reranks_it(smoke_config):
    config = with_members(smoke_config, 1, max_steps=10, channel_members=1)
    config = replace(config, eval=replace(config.eval, channel_weight=0.5))
    run_dir = train(config, command="python scripts/train.py smoke")
    reverse = load_checkpoint(run_dir / "member2" / "checkpoints" / "best.pt")
    assert reverse["config"]["model"]["direction"] == "reverse"
    assert reverse["src_vocab"] == load_checkpoint(run_dir / "checkpoints" / "best.pt")["tgt_vocab"]
    results = evaluate(plan_for(config))
    assert results["label"] == "rerank" and results["checkpoints"] == [
        str(run_dir / "checkpoints" / "best.pt")]
    assert results["rerank"] == [str(run_dir / "member2" / "checkpoints" / "best.pt")]
    assert results["rerank_weights"] == [0.5]
