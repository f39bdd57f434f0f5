"""The decoding scripts choose OpenMP's wait policy before torch loads; training leaves it alone."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_sleep_while_waiting_sets_passive_without_overriding_the_user_or_importing_torch():
    code = ("import os, sys; from nmt.cli import sleep_while_waiting; sleep_while_waiting(); "
            "print(os.environ['OMP_WAIT_POLICY'], 'torch' in sys.modules)")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}

    def run(env: dict[str, str]) -> list[str]:
        return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              check=True).stdout.split()

    assert run(env) == ["PASSIVE", "False"]
    assert run({**env, "OMP_WAIT_POLICY": "ACTIVE"}) == ["ACTIVE", "False"]


def _statements_before_the_call(path: Path) -> list[ast.stmt]:
    body = ast.parse(path.read_text()).body
    for index, node in enumerate(body):
        if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", None) == "sleep_while_waiting"):
            return body[:index]
    pytest.fail(f"{path} never calls sleep_while_waiting()")


@pytest.mark.parametrize("script", ["scripts/translate.py", "scripts/evaluate.py", "scripts/serve.py",
                                    "bench/bench_decode.py"])
def test_decoding_scripts_call_it_before_any_import_that_could_load_torch(script):
    for node in _statements_before_the_call(REPO / script):
        if isinstance(node, ast.ImportFrom):
            assert node.module in ("nmt.cli", "__future__"), f"{script}: {node.module} first"
        elif isinstance(node, ast.Import):
            assert [alias.name for alias in node.names] == ["os"], script


def test_training_does_not_call_it():
    assert "sleep_while_waiting" not in (REPO / "scripts" / "train.py").read_text()
