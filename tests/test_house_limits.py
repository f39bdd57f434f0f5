"""The house's limits (shared/DESIGN.md): a reader holds a file, a function and its arguments in
their head at once. No file over 300 lines, no function over 60 lines, no function over 8
parameters (self and cls not counted), in the package, the scripts and the benchmarks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers import REPO

MAX_FILE_LINES, MAX_FUNCTION_LINES, MAX_PARAMETERS = 300, 60, 8
FOLDERS = ("nmt", "scripts", "bench")


def python_files() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (REPO / folder).rglob("*.py"))


def parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return len([name for name in names if name not in ("self", "cls")])


def offences(path: Path) -> list[str]:
    """What in `path` breaks a limit, one line each."""
    text = path.read_text(encoding="utf-8")
    where = path.relative_to(REPO)
    found = []
    if len(text.splitlines()) > MAX_FILE_LINES:
        found.append(f"{where}: {len(text.splitlines())} lines")
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            assert node.end_lineno is not None
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{where}:{node.lineno} {node.name}: {length} lines")
            if parameters(node) > MAX_PARAMETERS:
                found.append(f"{where}:{node.lineno} {node.name}: {parameters(node)} parameters")
    return found


def test_the_checker_sees_what_breaks_a_limit(tmp_path, monkeypatch):
    monkeypatch.setattr("test_house_limits.REPO", tmp_path)
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    wide = ", ".join(f"a{i}" for i in range(MAX_PARAMETERS + 1))
    source = tmp_path / "big.py"
    source.write_text(f"def long():\n{body}\n\n\ndef wide(self, {wide}):\n    pass\n"
                      + "\n" * MAX_FILE_LINES, encoding="utf-8")
    lines = len(source.read_text(encoding="utf-8").splitlines())
    assert lines > MAX_FILE_LINES
    assert offences(source) == [
        f"big.py: {lines} lines", f"big.py:1 long: {MAX_FUNCTION_LINES + 1} lines",
        f"big.py:{MAX_FUNCTION_LINES + 4} wide: {MAX_PARAMETERS + 1} parameters"]


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_house_keeps_its_limits(folder):
    found = [line for path in python_files() if path.is_relative_to(REPO / folder)
             for line in offences(path)]
    assert not found, "split these into named steps or smaller files:\n" + "\n".join(found)
