"""The layering of DESIGN.md, kept true by import-linter (.importlinter, run by `make lint`): the project keeps
every contract, a deliberate wrong import breaks one (on a copy of the project), and no module takes part in
an import circle."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("runners", "toolbench_adapter")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """`lint-imports` as `make lint` runs it, on the project at ``root`` (its packages first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
                           "sys.exit(lint_imports_command())", str(root / ".importlinter"), "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("layers")
    for package in PACKAGES:
        shutil.copytree(PROJECT_ROOT / package, root / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.csv", "*.md", "*.tex", "*.yaml"))
    shutil.copy(PROJECT_ROOT / ".importlinter", root / ".importlinter")
    return root


def add_import(path: Path, line: str) -> None:
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("from __future__ import annotations\n")
    path.write_text(head + sep + line + "\n" + rest if sep else line + "\n" + text, encoding="utf-8")


def test_the_project_keeps_every_import_contract(project_copy):
    result = lint_imports(project_copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    # a search algorithm reaching up into the run that drives it
    ("runners/search/tree.py", "from runners.execution import runner  # noqa", "runners: cli -> sweep -> judging"),
    # the library importing the part that moves
    ("toolbench_adapter/files/fileio.py", "import runners.failures  # noqa", "toolbench_adapter imports nothing"),
    # a backend importing another backend
    ("runners/models/scripted.py", "from runners.models import hf  # noqa", "model backends do not import"),
    # the search writing files
    ("runners/search/cot.py", "from toolbench_adapter.runs import folder  # noqa", "runners.search writes no files"),
    # a lower room of the library reaching up (the transport reading a run folder; before issue 44 the caps module
    # imported server/ratelimit.py, a room above it)
    ("toolbench_adapter/net/transport.py", "from toolbench_adapter.runs import folder  # noqa",
     "toolbench_adapter: report"),
    # a label file's reader depending on a judge
    ("toolbench_adapter/evaluation/storage.py", "from toolbench_adapter.evaluation.judging import judge  # noqa",
     "evaluation's top-level modules import none"),
    # the scores reaching up into the audit
    ("toolbench_adapter/evaluation/scoring/scores.py", "from toolbench_adapter.evaluation.audit import cards  # noqa",
     "evaluation: audit | published"),
    # the judge's library reaching the runners (unseen while evaluation/ had no __init__.py)
    ("toolbench_adapter/evaluation/scoring/counts.py", "from runners.execution import runner  # noqa",
     "toolbench_adapter imports nothing"),
])
def test_a_wrong_import_breaks_a_contract(project_copy, tmp_path, module, line, broken):
    root = tmp_path / "project"
    shutil.copytree(project_copy, root)
    add_import(root / module, line)
    result = lint_imports(root)
    assert result.returncode == 1, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert "0 broken" not in text and f"{broken}" in text.split("Broken contracts")[-1]


def test_every_module_is_in_the_import_graph():
    """A folder without __init__.py is invisible to import-linter and grimp: its imports would go unchecked."""
    graph = grimp.build_graph(*PACKAGES)
    files = {".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts).removesuffix(".__init__")
             for package in PACKAGES for path in (PROJECT_ROOT / package).rglob("*.py")}
    assert files - graph.modules == set()


def test_no_two_folders_import_each_other():
    """No two folders (or top-level modules) of a package (toolbench_adapter.env, runners.search, ...) import
    each other: such a pair need not be a circle between two modules (env/ and server/ were one)."""
    graph = grimp.build_graph(*PACKAGES)

    def folder(module: str) -> str:
        return ".".join(module.split(".")[:2])

    edges = {(folder(module), folder(imported)) for module in graph.modules
             for imported in graph.find_modules_directly_imported_by(module)}
    assert sorted((a, b) for a, b in edges if a < b and (b, a) in edges) == []


def test_no_module_is_in_an_import_circle():
    """Tarjan's strongly connected components over the import graph (function-level imports included)."""
    graph = grimp.build_graph(*PACKAGES)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:  # iterative enough for ~200 modules: recursion depth is the import depth
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert circles == []


def test_the_hf_judge_exists_whichever_module_is_imported_first():
    """No registration at import time: the library's CHAT_CLIENTS names the hf judge (an entry point of the
    installed package, setup.cfg) before anything under runners/ is imported, and importing runners registers
    nothing."""
    code = ("import sys; from toolbench_adapter.evaluation.judging.chat import CHAT_CLIENTS; "
            "assert 'hf' in CHAT_CLIENTS.names(), CHAT_CLIENTS.names(); "
            "assert not any(m == 'runners' or m.startswith('runners.') for m in sys.modules); "
            "print(CHAT_CLIENTS.get('hf').__module__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "runners.models.chat_adapter"
    init = (PROJECT_ROOT / "runners" / "__init__.py").read_text(encoding="utf-8")
    assert "register" not in init.replace("registers nothing", "")
