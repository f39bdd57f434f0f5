"""nmt/config/stages.py: which config keys each stage reads, and how an override that a stage
does not read is refused (by a script before its work, by make before any stage)."""

from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import subprocess
import sys

import pytest

from helpers import REPO
from nmt.cli import config_arguments, run_cli
from nmt.config.schema import Config
from nmt.config.stages import (DECODING, RUN, STAGES, TARGETS, TOP_LEVEL, check_overrides, main,
                               pick, reads, refusal, stages_reading)
from nmt.errors import NMTError


def test_the_stages_cover_every_top_level_key_of_the_schema():
    assert set(TOP_LEVEL) == {f.name for f in dataclasses.fields(Config)}
    for key in TOP_LEVEL:  # each read somewhere, with a make target to give it to
        assert any(stage in TARGETS for stage in stages_reading(key)), key


def test_which_run_and_data_reach_every_stage_and_decoding_keys_never_train():
    for stage in STAGES:
        assert all(reads(stage, key) for key in ("name", "seed", "runs_dir", "data.workers")), stage
    for key in ("search.beam_size", "eval.channel_weight", "export.quantization", "serve.max_lines"):
        assert not reads("train", key) and not reads("prepare", key), key
    for stage in ("evaluate", "tune", "translate", "align", "serve"):
        assert all(reads(stage, f"{section}.x") for section in DECODING)
        assert reads(stage, "training.channel_members") and reads(stage, "model.architecture")
    assert [s for s in STAGES if reads(s, "serve.max_lines")] == ["serve"]
    assert set(STAGES["prepare"]) == set(RUN)


def test_a_key_the_config_lacks_is_left_to_the_loader():
    assert reads("prepare", "trainig.lr")  # load_config names it, with the nearest valid key
    check_overrides("prepare", ["trainig.lr=1"])


def test_a_script_refuses_a_key_its_stage_does_not_read():
    with pytest.raises(NMTError) as error:
        check_overrides("train", ["training.lr=1", "search.beam_size=3"], "train.py")
    message = str(error.value)
    assert message.startswith("override 'search.beam_size=3': train.py does not read search.*")
    assert "evaluate, tune, translate, align" in message and 'make eval ARGS="search.beam_size=3"' in message
    check_overrides("train", ["training.lr=1", "name=x", "data.workers=1", "distill.n_best=2"])
    check_overrides(None, ["serve.max_lines=2"])  # a script of no stage (show_config.py)


def _evaluate_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evaluate.py")
    config_arguments(parser, "evaluate")
    return parser


def test_run_cli_refuses_before_main_runs(capsys):
    ran: list = []
    with pytest.raises(SystemExit) as exit_info:
        run_cli(ran.append, _evaluate_parser(), ["x.yaml", "search.beam_size=3", "serve.max_lines=2"])
    assert exit_info.value.code == 2 and ran == []
    err = capsys.readouterr().err
    assert err.startswith("error: override 'serve.max_lines=2': evaluate.py does not read serve.*")
    assert "it is read by serve" in err and err.count("\n") == 1
    run_cli(ran.append, _evaluate_parser(), ["x.yaml", "search.beam_size=3", "training.threads=1"])
    assert ran and ran[0].overrides == ["search.beam_size=3", "training.threads=1"]
    with pytest.raises(ValueError, match="unknown stage 'evaluation'"):
        config_arguments(argparse.ArgumentParser(), "evaluation")


def test_every_stage_script_names_its_stage():
    found = {}
    for script in sorted((REPO / "scripts").glob("*.py")):
        match = re.search(r"config_arguments\(parser(?:, \"(\w+)\")?\)", script.read_text("utf-8"))
        if match:
            found[script.stem] = match.group(1)
    assert found.pop("show_config") is None  # prints any key
    assert all(stage in STAGES for stage in found.values()), found
    assert {found[s] for s in ("prepare", "train", "evaluate", "tune", "translate", "align",
                               "serve")} == set(TARGETS)


def test_pick_keeps_the_order_and_the_options_unless_asked_for_keys():
    words = ["name=x", "-v", "search.beam_size=3", "--reverse", "r.pt", "training.lr=1", "trainig.x=1"]
    assert pick("train", words) == ["name=x", "-v", "--reverse", "r.pt", "training.lr=1", "trainig.x=1"]
    assert pick("train", words, options=False) == ["name=x", "training.lr=1", "trainig.x=1"]
    assert pick("evaluate", words, options=False) == ["name=x", "search.beam_size=3",
                                                      "training.lr=1", "trainig.x=1"]
    assert pick("prepare", ["--method=x", "data.workers=1", "seed=2"]) == ["--method=x",
                                                                          "data.workers=1", "seed=2"]


def test_refusal_names_the_key_the_stages_and_who_reads_it():
    assert refusal("ARGS", "eval", ["prepare", "train", "evaluate"],
                   ["eval.channel_weight=0", "-v", "training.max_minutes=5"]) is None
    message = refusal("ARGS", "eval", ["prepare", "train", "evaluate"], ["serve.max_runs=2"])
    assert message == ("ARGS serve.max_runs=2: no stage that make eval runs with ARGS (prepare, "
                       "train, evaluate) reads serve.*; it is read by serve (e.g. make serve "
                       "ARGS=\"serve.max_runs=2\")")
    typo = refusal("ARGS", "train", ["prepare", "train"], ["trainig.lr=1"])
    assert typo.startswith("ARGS trainig.lr=1: the config has no key 'trainig' (did you mean training?)")
    assert "no key ''" in refusal("ARGS", "train", ["train"], ["=3"])


def test_the_command_line_make_calls(capsys):
    assert main(["pick", "evaluate", "--", "eval.rerank_weights=[0.5, 0.3]", "training.lr=1",
                 "name=a b"]) == 0
    printed = capsys.readouterr().out.strip()
    assert shlex.split(printed) == ["eval.rerank_weights=[0.5, 0.3]", "training.lr=1", "name=a b"]
    assert main(["pick", "--keys", "train", "--", "-v", "eval.split=dev", "seed=3"]) == 0
    assert capsys.readouterr().out == "seed=3\n"
    assert main(["check", "ARGS", "eval", "prepare", "train", "evaluate", "--", "eval.split=dev"]) == 0
    assert capsys.readouterr().out == "ok\n"
    assert main(["check", "ARGS", "train", "prepare", "train", "--", "eval.split=dev"]) == 1
    assert capsys.readouterr().out.startswith("ARGS eval.split=dev: no stage that make train")
    assert main(["pick", "evaluation", "--", "x=1"]) == 2
    assert "usage:" in capsys.readouterr().err


def test_make_runs_it_without_the_virtual_environment():
    """make calls it with the system's Python, before .venv exists: the standard library only."""
    code = ("import sys; import nmt.config.stages; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nmt', 'yaml', 'torch')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "['nmt', 'nmt.config', 'nmt.config.stages', 'nmt.errors']"
