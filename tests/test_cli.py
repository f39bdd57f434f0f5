"""The scripts' shared command line: overrides anywhere, errors without tracebacks; the
installed nmt-<stage> commands."""

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO
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


def test_make_align_eval_passes_weights_and_method(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    repo = REPO

    def dry_run(*variables: str) -> str:  # -n: print the recipes, run nothing
        done = subprocess.run(["make", "-n", "-C", str(repo), "align-eval", f"GOLD={tmp_path}/g.tsv",
                               *variables], capture_output=True, text=True, check=True)
        return next(line for line in done.stdout.splitlines() if "scripts/align.py" in line)

    command = dry_run("WEIGHTS=posterior", "METHOD=grow-diag-final-and")
    assert "--weights posterior --method grow-diag-final-and" in command
    assert f"--gold {tmp_path}/g.tsv" in command
    assert "--weights" not in dry_run() and "--method" not in dry_run()


def installed_commands() -> dict[str, str]:
    """pyproject's [project.scripts]: {"nmt-dual-score": "dual_score", ...}."""
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    return dict(re.findall(r'^(nmt-[a-z-]+) = "nmt\.cli:([a-z_]+)"$', text, re.M))


def test_every_stage_script_has_an_installed_command():
    stages = {"prepare", "train", "evaluate", "tune", "translate", "align", "report", "compare",
              "serve", "dual_score"}
    assert stages <= set(installed_commands().values())
    assert all(name == f"nmt-{stage.replace('_', '-')}" for name, stage in installed_commands().items())


@pytest.mark.e2e
@pytest.mark.parametrize("name, stage", sorted(installed_commands().items()))
def test_installed_commands_run_the_stage_scripts(name, stage):
    command = Path(sys.executable).parent / name
    assert command.is_file(), f"{command} is not installed: pip install -e . (make setup)"
    shown = subprocess.run([str(command), "--help"], capture_output=True, text=True, timeout=120)
    script = subprocess.run([sys.executable, f"scripts/{stage}.py", "--help"], capture_output=True,
                            text=True, timeout=120, cwd=REPO)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split("\n", 1)[1] == script.stdout.split("\n", 1)[1]  # usage line aside
