"""Leaderboards without trials are the bytes they were before trials existed (issue 42): Markdown, CSV and LaTeX of
boards built from score rows (SoPR upstream and strict, SoWR, a marked row, a cell without a score) and of a run
evaluated end to end (the scripted agent, an in-process judge), against the text recorded from the code before
issue 42 (tests/fixtures/golden_tables.json). The comparability and judge-audit lines are other issues' wording:
they are replaced by markers before the comparison, so only this issue's part of the tables is pinned. One change is
meant: a run's row carries its cost and latency (issue 42 item 4) in columns after all the others, in the CSV only;
the test takes them off (and checks they are exactly those) before comparing the rest byte for byte.

Regenerate (only when a change of the tables is meant): python -m tests.test_tables_golden > tests/fixtures/golden_tables.json"""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models.scripted import ScriptedBackend
from tests.test_run_outcomes import SolvedJudge
from toolbench_adapter.evaluation.scoring.counts import Counts
from toolbench_adapter.evaluation.scoring.results import ScoreRow
from toolbench_adapter.evaluation.scoring.scores import Score
from toolbench_adapter.report import tables
from toolbench_adapter.runs.cost import COST_COLUMNS

GOLDEN = Path(__file__).parent / "fixtures" / "golden_tables.json"
RENDERERS = {"md": tables.to_markdown, "csv": tables.to_csv, "tex": tables.to_latex}


def score_rows() -> list[ScoreRow]:
    def sopr(mode, mean, std, n, runs, **extra):
        return Score("SoPR", mode, mean, std, n, runs, **extra)

    rows = []
    for group, (mean, std) in {"G1_instruction": (50.0, 4.1), "G1_category": (33.3, 0.0),
                                "G2_instruction": (62.5, 12.5)}.items():
        rows.append(ScoreRow("model-a", group, sopr("upstream", mean, std, 8, [mean - std, mean + std]),
                             method="CoT@1", judge="judge-x [tools]"))
        rows.append(ScoreRow("model-a", group, sopr("strict", mean * 0.8, std, 10, [mean * 0.8], missing=2),
                             method="CoT@1", judge="judge-x [tools]"))
        rows.append(ScoreRow("model-b", group, sopr("upstream", mean / 2, std / 2, 8, [mean / 2] * 3, errors=1),
                             method="DFS_woFilter_w2", judge="judge-x [tools]"))
    rows.append(ScoreRow("model-b", "G3_instruction", sopr("upstream", 0.0, 0.0, 0, [], errors=3),
                         method="DFS_woFilter_w2", judge="judge-x [tools]"))
    rows.append(ScoreRow("model-b", "G1_instruction", Score("SoWR", "upstream", 40.0, 0.0, 10, ties=2),
                         reference="model-a", judge="judge-x [tools]"))
    return rows


def boards_of_rows() -> list[tables.Leaderboard]:
    counts = {"model-a": {"G1_instruction": Counts(queries=8, finished=8, valid=7, answered=6, win=6)}}
    return tables.build_leaderboards(score_rows(), scored_anyway={"model-a": "scored with 1 query lost"},
                                     counts=counts, comparability={"model-a": "line A"},
                                     judge_cards={"model-b": "card B"})


def boards_of_a_run(folder: Path) -> list[tables.Leaderboard]:
    cfg = RunConfig(name="golden", out_root=str(folder), backend="scripted")
    Runner(cfg, backend=ScriptedBackend(), progress=False).run()
    return evaluate_run(folder / "golden", SolvedJudge(), evaluate_times=2, cache_path=None, progress=False).boards


def normalised(board: tables.Leaderboard, text: str) -> str:
    """The comparability and judge-audit lines (other issues' wording) as markers."""
    lines = [(board.comparability_of(row), "@@COMPARABILITY@@") for row in board.rows]
    lines += [(board.judge_card_of(row), "@@JUDGE_CARD@@") for row in board.rows]
    for line, marker in sorted(set(lines), key=lambda item: -len(item[0])):
        if line:
            text = text.replace(tables._latex_escape(line), marker).replace(line, marker)
    return text


def rendered(boards: list[tables.Leaderboard]) -> dict[str, str]:
    """Each board's text; the CSV's cost columns (a run's, issue 42 item 4) off, the other issues' lines marked."""
    return {f"{board.metric} {board.mode} {kind}": normalised(board, without_costs(render(board)) if kind == "csv"
                                                                else render(board))
            for board in boards for kind, render in RENDERERS.items()}


def without_costs(text: str) -> str:
    """A CSV with the cost columns (the last ones, when there) taken off, written as tables.to_csv writes."""
    rows = list(csv.reader(io.StringIO(text)))
    if rows[0][-len(COST_COLUMNS):] != COST_COLUMNS:
        return text
    buffer = io.StringIO()
    csv.writer(buffer).writerows(row[:-len(COST_COLUMNS)] for row in rows)
    return buffer.getvalue()


def current(folder: Path) -> dict[str, dict[str, str]]:
    return {"score rows": rendered(boards_of_rows()), "a run": rendered(boards_of_a_run(folder))}


def test_tables_without_trials_are_the_bytes_they_were(tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    now = current(tmp_path)
    for source, texts in golden.items():
        assert now[source].keys() == texts.keys()
        for name, text in texts.items():
            assert now[source][name] == text, f"{source}: {name} changed"


def test_the_one_meant_change_is_a_runs_cost_columns_after_the_others(tmp_path):
    for board in boards_of_a_run(tmp_path):
        header = next(csv.reader(io.StringIO(tables.to_csv(board))))
        assert header[-len(COST_COLUMNS):] == COST_COLUMNS
    for board in boards_of_rows():  # rows of score files: no run, no cost columns
        assert not set(COST_COLUMNS) & set(next(csv.reader(io.StringIO(tables.to_csv(board)))))


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        json.dump(current(Path(folder)), sys.stdout, indent=1, ensure_ascii=False)
        print()
