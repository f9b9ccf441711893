"""Examples that cannot go stale (issue 44 item 3): every command block of docs/ marked ```{.bash .run} is run on
the offline set-up, from the project's root, and its output checked loosely (docs_build/runnable.py): a renamed
flag, a changed message or a changed figure fails here instead of misleading a reader. The examples write
nothing (results/ is as it was)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from docs_build import runnable

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VENV = Path(sys.prefix)
EXAMPLES = runnable.examples(PROJECT_ROOT / "docs", PROJECT_ROOT)


def listing(folder: Path, depth: int = 3) -> set[str]:
    found = set()
    for here, dirs, files in os.walk(folder):
        level = len(Path(here).relative_to(folder).parts)
        if level >= depth:
            dirs.clear()
        found.update(str(Path(here, name).relative_to(folder)) for name in dirs + files)
    return found


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    if not (VENV / "bin" / "tba").exists():
        pytest.skip(f"no tba in {VENV / 'bin'}: install the project (make install), then run this with its python")
    return runnable.environment(VENV, PROJECT_ROOT)


def test_the_docs_have_runnable_examples():
    pages = {example.page for example in EXAMPLES}
    assert len(EXAMPLES) >= 6 and len(pages) >= 5, [e.name for e in EXAMPLES]
    assert all(example.commands for example in EXAMPLES)
    assert any(c.exit != 0 for e in EXAMPLES for c in e.commands)  # refusals are examples too


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.name for e in EXAMPLES])
def test_the_example_runs_as_the_page_says(example, env):
    before = listing(PROJECT_ROOT / "results")
    problems = runnable.run(example, PROJECT_ROOT, env)
    assert problems == [], f"{example.name}:\n" + "\n".join(problems)
    assert listing(PROJECT_ROOT / "results") - before == set(), f"{example.name} wrote into results/"


# ---- the checker itself: it catches what it is for


def test_a_changed_figure_or_a_wrong_exit_status_fails(env, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```{.bash .run}\n$ printf 'total            765\\nnext line\\n'\ntotal 765\n"
                    "$ printf 'total 764\\n'\ntotal 765\n$ sh -c 'exit 3'\n```\n", encoding="utf-8")
    [example] = runnable.examples(tmp_path, tmp_path)
    problems = runnable.run(example, tmp_path, env)
    assert len(problems) == 2, problems
    assert "lacks ['total 765']" in problems[0] and "printf 'total 764" in problems[0]
    assert "exit 3, the page says 0" in problems[1]


def test_expected_lines_match_loosely_and_in_order():
    output = "header\n  OK       query files      data/x: 765 queries (12 files)\nG1   163\ntotal   765\n"
    assert runnable.missing(["OK query files …: 765 queries", "total 765"], output) == []
    assert runnable.missing(["total 765", "G1 163"], output) == ["G1 163"]  # order matters
    assert runnable.missing(["G1 164"], output) == ["G1 164"]


def test_the_marker_is_the_fence_attribute_and_exit_the_comment():
    [(line, body)] = runnable.blocks("text\n```bash\n$ not run\n```\n```{.bash .run}\n$ tba x \\\n  --y  # exit 2\n"
                                     "out\n…\n```\n")
    assert line == 5
    [command] = runnable.parse(body)
    assert command.text == "tba x \\\n  --y  # exit 2" and command.exit == 2 and command.expected == ["out"]
    with pytest.raises(ValueError, match="starts with output"):
        runnable.parse(["output first"])
