"""The packages' layering: nmt/training builds on nmt/checkpoints, never the other way round.

Read from the source with ast (every import, also those inside functions), so a cycle fails here
rather than as an ImportError in whichever command happens to import the two in the wrong order.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from helpers import REPO

# package -> the packages it must not import
LOWER_THAN = {"nmt.checkpoints": ["nmt.training"], "nmt.data": ["nmt.training", "nmt.checkpoints"]}


def imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return modules


def offending_imports(package: str, forbidden: list[str]) -> list[str]:
    folder = REPO / package.replace(".", "/")
    return [f"{path.relative_to(REPO)} imports {module}"
            for path in sorted(folder.rglob("*.py"))
            for module in sorted(imported_modules(path))
            if any(module == banned or module.startswith(banned + ".") for banned in forbidden)]


def test_lower_packages_do_not_import_higher_ones():
    for package, forbidden in LOWER_THAN.items():
        assert offending_imports(package, forbidden) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    module = tmp_path / "nmt" / "checkpoints" / "late.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from nmt.training.loop import train\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert offending_imports("nmt.checkpoints", ["nmt.training"]) == [
        "nmt/checkpoints/late.py imports nmt.training.loop"]
