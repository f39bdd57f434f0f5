"""The packages' layering, read from the source with ast (every import, also those inside
functions), so a cycle fails here rather than as an ImportError in whichever command happens to
import the two in the wrong order:

- no import cycle between the modules of nmt/, nor between its packages (nmt.config, nmt.data,
  ...: a package's modules together import another's only if that one's never import back);
- nmt/training builds on nmt/checkpoints and nmt/data, never the other way round;
- library code never imports nmt.cli, the scripts' command line.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from helpers import REPO

# package -> the packages it must not import
LOWER_THAN = {"nmt.checkpoints": ["nmt.training"], "nmt.data": ["nmt.training", "nmt.checkpoints"]}
ENTRY_POINTS = {"nmt.cli"}  # what only scripts/ import


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, anywhere in it; `from a.b import c` names a.b and a.b.c (c
    may be a module of its own)."""
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def offending_imports(package: str, forbidden: list[str]) -> list[str]:
    folder = REPO / package.replace(".", "/")
    return [f"{path.relative_to(REPO)} imports {module}"
            for path in sorted(folder.rglob("*.py"))
            for module in sorted(imported_modules(path))
            if any(module == banned or module.startswith(banned + ".") for banned in forbidden)]


def module_graph(root: Path) -> dict[str, set[str]]:
    """{module: the modules of the nmt package it imports}, e.g. nmt.data.prepare -> nmt.io."""
    files = {_module_name(path, root): path for path in sorted((root / "nmt").rglob("*.py"))}
    graph = {}
    for name, path in files.items():
        targets = {_owning_module(module, files) for module in imported_modules(path)}
        graph[name] = {target for target in targets if target not in (None, name)}
    return graph


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _owning_module(module: str, files: dict) -> str | None:
    """The module of nmt/ that `module` is or lies in (a.b.name -> a.b), None outside nmt/."""
    while module and module not in files:
        module = module.rpartition(".")[0]
    return module or None


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph seen one level down: nmt.data.prepare -> nmt.data; nmt.io stays."""
    def package(module: str) -> str:
        return ".".join(module.split(".")[:2])

    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        packages.setdefault(package(module), set()).update(
            package(target) for target in targets if package(target) != package(module))
    return packages


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as [a, b, ..., a], or None (a depth-first search)."""
    finished: set[str] = set()  # nodes from which no cycle is reachable

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in finished:
            return None
        for target in sorted(graph.get(node, ())):
            cycle = visit(target, path + [node])
            if cycle:
                return cycle
        finished.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_no_import_cycle_between_modules_or_packages():
    graph = module_graph(REPO)
    assert "nmt.data.prepare" in graph and "nmt.config.schema" in graph["nmt.data.prepare"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)
    cycle = find_cycle(package_graph(graph))
    assert cycle is None, "import cycle between packages: " + " -> ".join(cycle)


def test_library_code_never_imports_the_command_line():
    graph = module_graph(REPO)
    offenders = sorted(f"{module} imports {target}" for module, targets in graph.items()
                       for target in targets & ENTRY_POINTS)
    assert offenders == []


def test_lower_packages_do_not_import_higher_ones():
    for package, forbidden in LOWER_THAN.items():
        assert offending_imports(package, forbidden) == []


def test_the_check_sees_an_import_inside_a_function(tmp_path, monkeypatch):
    module = tmp_path / "nmt" / "checkpoints" / "late.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from nmt.training.loop import train\n", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    assert offending_imports("nmt.checkpoints", ["nmt.training"]) == [
        "nmt/checkpoints/late.py imports nmt.training.loop",
        "nmt/checkpoints/late.py imports nmt.training.loop.train"]


def write_modules(root: Path, sources: dict[str, str]) -> None:
    for name, source in sources.items():
        path = root / (name.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


def test_a_cycle_hidden_inside_a_function_is_found_and_named(tmp_path):
    write_modules(tmp_path, {
        "nmt.__init__": "", "nmt.a.__init__": "", "nmt.a.one": "from nmt.a.two import g\n",
        "nmt.a.two": "def g():\n    from nmt.a import one\n", "nmt.b": "import nmt.a.one\n"})
    assert find_cycle(module_graph(tmp_path)) == ["nmt.a.one", "nmt.a.two", "nmt.a.one"]


def test_a_cycle_between_packages_is_found(tmp_path):
    # config.checks -> data.sources and data.prepare -> config.schema: no module cycle, but
    # importing either package can start the other's half-initialised
    write_modules(tmp_path, {
        "nmt.__init__": "", "nmt.config.__init__": "", "nmt.data.__init__": "",
        "nmt.config.checks": "def f():\n    from nmt.data.sources import parse\n",
        "nmt.config.schema": "from nmt.config.checks import f\n", "nmt.data.sources": "",
        "nmt.data.prepare": "from nmt.config.schema import Config\n"})
    graph = module_graph(tmp_path)
    assert find_cycle(graph) is None
    assert find_cycle(package_graph(graph)) == ["nmt.config", "nmt.data", "nmt.config"]
