"""Every "not a run folder" error carries a fix line saying where run folders come from (issue 33.10: `tba
table results/runs/nope` had none)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from runners.cli import main

ROOT = Path(__file__).resolve().parents[1]


# {nope}: no such folder; {empty}: a folder with nothing in it; {out}: where a command would write
COMMANDS = [
    "table {nope} --out {out}",
    "evaluate {nope}", "evaluate {empty}",
    "report {nope} --out {out}/r.html", "report {empty} --out {out}/r.html",
    "report --index {nope}",
    "merge {nope} {empty} --out {out}/m", "merge {empty} {empty} --out {out}/m",
    "compare-runs --runs {nope} {empty} --out {out}", "compare-parsers --runs {empty} {empty} --out {out}",
    "compare-parsers --input {nope} --out {out}",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_not_a_run_folder_error_says_where_run_folders_come_from(tmp_path, capsys, command):
    (tmp_path / "empty").mkdir()
    argv = command.format(nope=tmp_path / "nope", empty=tmp_path / "empty", out=tmp_path / "out").split()
    assert main(argv) == 2
    err = capsys.readouterr().err
    fix = err.partition("\n  fix: ")[2]
    assert fix, f"tba {command}: no fix line in {err!r}"
    assert "tba run" in fix and "results/runs" in fix, f"tba {command}: the fix names no run folder: {fix!r}"


RUN_FOLDER_MESSAGES = ("not a run folder", "run folder not found")


def test_every_raise_of_a_run_folder_error_in_the_code_has_a_fix():
    """Also the ones no command above reaches: each InputError whose message says the folder is not a run
    folder passes fix=."""
    found = []
    for path in [*ROOT.glob("toolbench_adapter/**/*.py"), *ROOT.glob("runners/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "InputError" and node.args):
                continue
            message = node.args[0]
            text = message.value if isinstance(message, ast.Constant) and isinstance(message.value, str) else ""
            if any(m in text for m in RUN_FOLDER_MESSAGES):
                found.append(path.name)
                assert any(k.arg == "fix" for k in node.keywords), f"{path}:{node.lineno}: {text!r} has no fix"
    assert len(found) >= 5  # evaluate, merge, the comparisons, the report, the answer reader
