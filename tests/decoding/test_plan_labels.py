"""The names of results files (nmt/decoding/plan_labels.py): no two decodings share one."""

from __future__ import annotations

from dataclasses import replace

import pytest
from random_checkpoint import write_random_checkpoint

from nmt.decoding.plan_labels import planned_label, resolved_label, same_decoding
from nmt.errors import NMTError


def test_the_machine_ends_the_label_when_it_decides_the_precision_or_the_device():
    assert resolved_label("ensemble.average_best5.rerank", False, "cpu") == "ensemble.average_best5.rerank"
    assert resolved_label("ensemble.average_best5.rerank", True, "cpu") == "ensemble.average_best5.rerank.bf16"
    assert resolved_label(None, False, "cuda") == "cuda"
    assert resolved_label(None, False, "cpu") is None
    assert resolved_label("rerank", True, "cuda") == "rerank.cuda.bf16"


def test_the_same_decoding_in_whatever_precision_the_machine_chose():
    planned = "ensemble.average_best5.rerank"
    assert same_decoding(planned, planned)
    assert same_decoding(planned + ".bf16", planned) and same_decoding("cuda.bf16", None)
    assert not same_decoding(planned + ".settings-3f9a1c", planned)
    assert not same_decoding("ensemble.average_best5", planned)
    assert not same_decoding("rerank", None) and same_decoding(None, None)


def test_the_planned_label_says_what_eval_chooses(smoke, tmp_path):
    assert planned_label(smoke) is None
    assert planned_label(replace(smoke, eval=replace(smoke.eval, checkpoint="last"))) == "last"
    members = replace(smoke, training=replace(smoke.training, members=2))
    assert planned_label(members) == "ensemble"
    averaged = replace(members, eval=replace(members.eval, average="best:5"))
    assert planned_label(averaged) == "ensemble.average_best5"
    paths = [write_random_checkpoint(tmp_path / f"{n}.pt", replace(smoke, seed=n)) for n in (1, 2)]
    ensemble = replace(smoke, eval=replace(smoke.eval, ensemble=[str(p) for p in paths]))
    label = planned_label(ensemble)
    assert label is not None and label.startswith("ensemble-")  # by the members' content
    paths[0].unlink()
    with pytest.raises(NMTError, match="no such checkpoint"):
        planned_label(ensemble)
