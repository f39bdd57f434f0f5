"""The scripts' shared command line: overrides anywhere, errors without tracebacks."""

import argparse

import pytest

from nmt.cli import config_arguments, run_cli
from nmt.errors import NMTError


def _parser():
    parser = argparse.ArgumentParser()
    config_arguments(parser)
    parser.add_argument("--input")
    return parser


def test_overrides_may_follow_options():
    seen = {}
    run_cli(lambda args: seen.update(vars(args)), _parser(),
            ["exp.yaml", "a.b=1", "--input", "x.zh", "c.d=2"])
    assert seen["config"] == "exp.yaml" and seen["overrides"] == ["a.b=1", "c.d=2"]
    assert seen["input"] == "x.zh"


def test_a_user_error_is_one_line_and_exit_status_2(capsys):
    def fail(args):
        raise NMTError("configs/x.yaml: unknown key 'model.atention'")

    with pytest.raises(SystemExit) as exit_info:
        run_cli(fail, _parser(), ["x.yaml"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == "error: configs/x.yaml: unknown key 'model.atention'\n"
