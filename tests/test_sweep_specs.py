"""Issue 34 item 5: make's compare-parsers-live and compare-structured are shipped sweep specs now
(runners/sweeps/), run by `tba sweep` as make runs them (the eval's flags replacing base and judges). On the scripted
agent they give the tables the old recipes gave: a parser fan-out judged run by run, and one run per structured
variant, then `tba compare-parsers` / `tba compare-runs` (compared here file by file, paths aside)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import solved

SPECS = Path(__file__).resolve().parent.parent / "runners" / "sweeps"
SCRIPTED = ["--backend", "scripted", "--config=", "--tool-root", "data/sample/toolenv/tools", "--quiet"]


@pytest.fixture(scope="module")
def judge():
    with OpenAIStandin(models=("judge-x",), respond=solved) as standin:
        yield standin


def judge_flags(judge) -> list[str]:
    return ["--judge-backend", "openai", "--judge-url", judge.url, "--judge-model", "judge-x", "--judge-api-key", "x",
            "--evaluate-times", "1"]


def evaluate(run_dir: Path, judge, cache: Path) -> None:
    assert main(["evaluate", str(run_dir), *judge_flags(judge)[:-2], "--evaluate-times", "1", "--cache", str(cache),
                 "--quiet"]) == 0


COMPARABILITY = re.compile(r'^.*not comparable with the StableToolBench leaderboard.*$\n?|,"not comparable[^"]*"', re.M)


def tables(folder: Path, *paths: Path) -> dict[str, str]:
    """The comparison's text files, with the run folders' paths and the comparability lines taken out: the old
    fan-out's variants shared one tool server (the second replayed the simulator's answers: its line says so),
    each cell has its own; everything else must be the same."""
    found = {}
    for file in sorted(folder.iterdir()):
        if file.suffix in (".md", ".csv", ".tex"):
            text = COMPARABILITY.sub("", file.read_text(encoding="utf-8"))
            for path in sorted(paths, key=lambda p: -len(str(p))):
                text = text.replace(str(path), "RUNS")
            found[file.name] = text
    return found


def test_the_compare_parsers_live_spec_gives_the_fan_outs_table(tmp_path, judge, capsys):
    old = tmp_path / "runs"
    assert main(["run", "--name", "set", "--out-root", str(old), "--parsers", "react-find,react-robust",
                 *SCRIPTED]) == 0
    for parser in ("react-find", "react-robust"):
        evaluate(old / "set" / parser, judge, tmp_path / "judge.jsonl")
    assert main(["compare-parsers", "--runs", str(old / "set"), "--out", str(tmp_path / "old")]) == 0
    new = tmp_path / "sweeps"
    assert main(["sweep", str(SPECS / "compare-parsers-live.yaml"), "--out", str(new), "--axis",
                 "parser=react-find,react-robust", *SCRIPTED, *judge_flags(judge),
                 "--judge-cache", str(tmp_path / "judge.jsonl")]) == 0
    assert main(["compare-parsers", "--runs", str(new / "parsers-live"), "--out", str(tmp_path / "new")]) == 0
    before = tables(tmp_path / "old", old / "set")
    after = tables(tmp_path / "new", new / "parsers-live")
    assert before and after == before


def test_the_compare_structured_spec_gives_the_variant_runs_table(tmp_path, judge):
    """The unconstrained toolllama variants (the scripted agent cannot constrain, nor write json-object): observe
    and reask:2, each a run of its own before, cells of one sweep now."""
    old = tmp_path / "runs"
    runs = []
    for dialect in ("toolllama",):
        for policy in ("observe", "reask:2"):
            name = f"{dialect}-off-{policy.replace(':', '-')}"
            assert main(["run", "--name", name, "--out-root", str(old), *SCRIPTED, "--dialect", dialect,
                         "--constrain", "off", "--on-invalid", policy]) == 0
            evaluate(old / name, judge, tmp_path / "judge.jsonl")
            runs.append(str(old / name))
    assert main(["compare-runs", "--runs", *runs, "--out", str(tmp_path / "old")]) == 0
    new = tmp_path / "sweeps"
    cells = ["toolllama__off__observe", "toolllama__off__reask_2"]
    assert main(["sweep", str(SPECS / "compare-structured.yaml"), "--out", str(new), "--cells", *cells, *SCRIPTED,
                 *judge_flags(judge), "--judge-cache", str(tmp_path / "judge.jsonl")]) == 0
    assert main(["compare-runs", "--runs", str(new / "structured"), "--out", str(tmp_path / "new")]) == 0
    before = tables(tmp_path / "old", old)
    after = tables(tmp_path / "new", new / "structured")
    assert before and after == before
