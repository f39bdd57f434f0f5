"""The run manifest (nmt/checkpoints/manifest.py): a run's models known by their role, never by
a folder's number."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from random_checkpoint import single_thread, write_random_checkpoint

from helpers import REPO
from nmt.checkpoints.manifest import (MANIFEST, channel_run_dirs, run_models, translating_run_dirs,
                                      write_manifest)
from nmt.config.loader import load_config, save_config
from nmt.decoding.plan import plan_for, resolve_plan
from nmt.errors import NMTError
from nmt.training.members import member_configs
from nmt.training.run_dir import claim_run_dir


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


def default_shape(tmp_path, *more: str):
    """A run shaped as the default: two translating members and a channel member."""
    return load_config(REPO / "configs" / "smoke.yaml",
                       [f"runs_dir={tmp_path}", "training.members=2", "training.channel_members=1",
                        "eval.channel_weight=0.5", *more])


def write_members(config) -> list:
    return [write_random_checkpoint(m.run_dir / "checkpoints" / "best.pt", m)
            for m in member_configs(config)]


def test_training_writes_what_each_model_is(tmp_path):
    config = default_shape(tmp_path)
    claim_run_dir(config)
    manifest = json.loads((config.run_dir / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["models"] == [
        {"folder": ".", "role": "translating", "direction": "forward"},
        {"folder": "member2", "role": "translating", "direction": "forward"},
        {"folder": "member3", "role": "channel", "direction": "reverse"}]


def test_fewer_members_asked_never_makes_a_translating_model_the_channel_one(tmp_path):
    """The run trained 2 + 1; decoded with training.members=1 its channel model is still
    member3, not member2 (a forward model) as a count of folders would say."""
    config = default_shape(tmp_path)
    claim_run_dir(config)
    paths = write_members(config)
    one = replace(config, training=replace(config.training, members=1))
    assert translating_run_dirs(one) == [config.run_dir]
    assert channel_run_dirs(one) == [config.run_dir / "member3"]
    plan = plan_for(one)
    assert plan.checkpoints == (paths[0],)
    assert [(m.path, m.channel) for m in plan.rescoring] == [(paths[2], True)]


def test_an_older_run_folder_is_read_from_its_saved_config_and_gets_a_manifest(tmp_path):
    config = default_shape(tmp_path, "eval.average=last:1")
    save_config(config, config.run_dir / "config.yaml")  # as training saved it, no manifest
    for member in member_configs(config):
        write_random_checkpoint(member.run_dir / "checkpoints" / "step_000007.pt", member)
    one = replace(config, training=replace(config.training, members=1))
    assert [m.role for m in run_models(one)] == ["translating", "translating", "channel"]
    assert not (config.run_dir / MANIFEST).exists()
    plan = resolve_plan(one)  # only reads
    assert plan.pending and not (config.run_dir / MANIFEST).exists()
    plan_for(one)  # the materializing step is the folder's next write
    assert (config.run_dir / MANIFEST).is_file()
    assert [m.role for m in run_models(one)] == ["translating", "translating", "channel"]


def test_a_rescorer_whose_direction_does_not_fit_its_role_is_an_error(tmp_path):
    config = default_shape(tmp_path)
    claim_run_dir(config)
    write_members(config)
    # member3 replaced by a forward model
    write_random_checkpoint(config.run_dir / "member3" / "checkpoints" / "best.pt", config)
    with pytest.raises(NMTError, match="member3/checkpoints/best.pt is a forward model"):
        resolve_plan(config)
    # a manifest that says a forward model is a channel one
    manifest = config.run_dir / MANIFEST
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["models"][1]["role"] = "channel"
    manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(NMTError, match="a forward model cannot be a channel model"):
        run_models(config)
    manifest.write_text("{", encoding="utf-8")
    with pytest.raises(NMTError, match="run.json: unreadable run manifest"):
        run_models(config)


def test_asking_for_more_models_than_the_run_holds_says_so(tmp_path):
    config = default_shape(tmp_path)
    write_manifest(config)
    more = replace(config, training=replace(config.training, members=3))
    with pytest.raises(NMTError, match=r"holds 2 translating model\(s\) but training.members = 3"):
        translating_run_dirs(more)
