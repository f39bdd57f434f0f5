"""Which checkpoint(s) a config scores and translates with, the label of their results, and
loading them as one model (nmt/checkpoints/choose.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from random_checkpoint import single_thread, write_random_checkpoint

from nmt.checkpoints.choose import (choose_checkpoints, configured_checkpoints, find_checkpoint,
                                    load_chosen, one_checkpoint)
from nmt.checkpoints.file import load_checkpoint
from nmt.config.schema import Config
from nmt.decoding.plan import plan_for
from nmt.errors import NMTError
from nmt.io import file_sha256
from nmt.model.ensemble import Ensemble


@pytest.fixture(autouse=True)
def _one_thread():
    with single_thread():
        yield


@pytest.fixture
def checkpoint(smoke: Config) -> Path:
    return write_random_checkpoint(smoke.run_dir / "checkpoints" / "best.pt", smoke)


def test_find_checkpoint_falls_back_to_last(smoke, checkpoint):
    assert find_checkpoint(smoke) == checkpoint
    last = checkpoint.rename(checkpoint.with_name("last.pt"))
    assert find_checkpoint(smoke) == last
    last.unlink()
    with pytest.raises(NMTError, match="train this experiment first"):
        find_checkpoint(smoke)


def test_translate_and_eval_use_the_checkpoints_the_config_names(smoke, checkpoint):
    """make translate translates with what make eval scores: eval.ensemble, eval.average, else
    eval.checkpoint."""
    folder = checkpoint.parent
    last = write_random_checkpoint(folder / "last.pt", replace(smoke, seed=5))
    assert configured_checkpoints(smoke) == [checkpoint]
    assert configured_checkpoints(replace(smoke, eval=replace(smoke.eval, checkpoint="last"))) == [last]
    ensemble = replace(smoke, eval=replace(smoke.eval, ensemble=[str(last), str(checkpoint)]))
    assert configured_checkpoints(ensemble) == [last, checkpoint]
    for step in (10, 20, 30):
        write_random_checkpoint(folder / f"step_{step:06d}.pt", replace(smoke, seed=step), step=step)
    average = replace(smoke, eval=replace(smoke.eval, average="last:2"))
    averaged = configured_checkpoints(average)
    assert averaged == [folder / "average_last2.pt"] and not averaged[0].exists()  # choosing reads
    assert plan_for(average).checkpoints == tuple(averaged)  # the plan's averaging step writes it
    assert load_chosen(averaged, "cpu").progress["step"] == 30  # the newest one's progress
    written = averaged[0].stat().st_mtime_ns
    plan_for(average)  # once: the same kept checkpoints are not averaged again
    assert averaged[0].stat().st_mtime_ns == written
    write_random_checkpoint(folder / "step_000040.pt", replace(smoke, seed=40), step=40)
    plan_for(average)  # ... until the run keeps others
    assert [e["step"] for e in load_checkpoint(averaged[0])["averaged_from"]] == [30, 40]


def test_a_run_of_several_members_is_scored_as_their_ensemble(smoke, checkpoint):
    """training.members > 1: each member's eval.checkpoint (or average), decoded together."""
    members = replace(smoke, training=replace(smoke.training, members=2))
    other = write_random_checkpoint(smoke.run_dir / "member2" / "checkpoints" / "best.pt",
                                    replace(smoke, seed=7))
    chosen = choose_checkpoints(members)
    assert chosen.paths == [checkpoint, other] and chosen.label == "ensemble"
    assert isinstance(load_chosen(chosen.paths, "cpu").model, Ensemble)
    other.unlink()
    with pytest.raises(NMTError, match="member2/checkpoints: train this experiment first"):
        choose_checkpoints(members)


def test_the_label_names_what_is_scored(smoke, checkpoint, tmp_path):
    """The run's own best.pt writes results.json; anything else results.<label>.json, and a
    file from elsewhere (another run's best.pt too) is named by its content."""
    other = write_random_checkpoint(tmp_path / "mine.pt", smoke)
    sha = file_sha256(other)[:8]
    assert choose_checkpoints(smoke).label is None
    assert choose_checkpoints(smoke, checkpoint) == choose_checkpoints(smoke)
    spelled_otherwise = Path(os.path.relpath(checkpoint))  # the same file, another spelling
    assert choose_checkpoints(smoke, spelled_otherwise).label is None
    assert choose_checkpoints(smoke, str(other)).label == f"mine-{sha}"
    elsewhere = write_random_checkpoint(tmp_path / "runs" / "other" / "checkpoints" / "best.pt",
                                        replace(smoke, seed=11))
    assert choose_checkpoints(smoke, elsewhere).label == f"best-{file_sha256(elsewhere)[:8]}"
    last = write_random_checkpoint(checkpoint.parent / "last.pt", replace(smoke, seed=12))
    assert choose_checkpoints(smoke, last).label == "last"
    assert choose_checkpoints(replace(smoke, eval=replace(smoke.eval, checkpoint="last"))).label == "last"
    pair = choose_checkpoints(smoke, [checkpoint, other]).label
    assert pair is not None and pair.startswith("ensemble-")
    assert choose_checkpoints(smoke, [checkpoint, elsewhere]).label != pair
    ensemble = replace(smoke, eval=replace(smoke.eval, ensemble=[str(checkpoint), str(other)]))
    assert choose_checkpoints(ensemble).label == pair  # eval.ensemble: by content, as named ones
    assert choose_checkpoints(smoke, [checkpoint, other], label="pair").label == "pair"
    with pytest.raises(NMTError, match="no such checkpoint file"):
        choose_checkpoints(smoke, tmp_path / "missing.pt")
    for step in (10, 20):
        write_random_checkpoint(checkpoint.parent / f"step_{step:06d}.pt", smoke, step=step)
    averaged = choose_checkpoints(replace(smoke, eval=replace(smoke.eval, average="last:2")))
    assert averaged.label == "average_last2"
    assert averaged.paths == [checkpoint.parent / "average_last2.pt"]
    with pytest.raises(NMTError, match="label 'a/b'"):
        choose_checkpoints(smoke, label="a/b")
    with pytest.raises(NMTError, match="no checkpoint given"):
        choose_checkpoints(smoke, [])


def test_one_checkpoint_is_the_named_one_or_the_runs_own(smoke, checkpoint, tmp_path):
    """The named one, else the run's eval.checkpoint; an eval.ensemble does not apply."""
    assert one_checkpoint(smoke) == checkpoint
    assert one_checkpoint(smoke, str(tmp_path / "x.pt")) == tmp_path / "x.pt"
    ensemble = replace(smoke, eval=replace(smoke.eval, ensemble=[str(tmp_path / "x.pt")] * 2))
    assert one_checkpoint(ensemble) == checkpoint


def test_load_chosen_gives_one_model_or_an_ensemble(smoke, checkpoint, tmp_path):
    one = load_chosen([checkpoint], "cpu")
    assert not isinstance(one.model, Ensemble) and not one.model.training
    assert (one.paths, one.progress["step"], one.device) == ([checkpoint], 7, torch.device("cpu"))
    assert one.config.model == smoke.model and one.subwords is None
    other = write_random_checkpoint(tmp_path / "other.pt", replace(smoke, seed=3), step=9)
    two = load_chosen([str(checkpoint), str(other)], "cpu")
    assert isinstance(two.model, Ensemble) and len(two.model.members) == 2
    assert (two.paths, two.progress["step"]) == ([checkpoint, other], 7)  # the first one's
    with pytest.raises(NMTError, match="model.architecture = transformer"):
        load_chosen([checkpoint], "cpu", architecture="transformer")
    with pytest.raises(NMTError, match="no checkpoint given"):
        load_chosen([], "cpu")
