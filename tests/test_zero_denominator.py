"""No number without a denominator: a leaderboard cell over zero queries prints no number (Markdown "–", CSV
empty, LaTeX "--", the report "–") and a footnote says why; the Average leaves it out and says over how many
cells it is; every row gives its n per cell. A query the model did not answer is no gap: upstream judges its
answer file Unsolved (0 of n judged is a score of 0.0), and strict counts a missing answer Unsolved (0 of N)."""

import csv
import io
import json
import re

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models.base import Completion
from runners.models.scripted import ScriptedBackend, scripted_call
from tests.test_reproduce import per_model_set, write_labels
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.evaluation.scoring.results import ScoreRow
from toolbench_adapter.evaluation.scoring.scores import Score
from toolbench_adapter.report.html import render_page
from toolbench_adapter.report.run_data import load_run
from toolbench_adapter.report.tables import build_leaderboards, to_csv, to_latex, to_markdown

GROUPS = ["G1_instruction", "G1_category", "G1_tool", "G2_category", "G2_instruction", "G3_instruction"]


def md_row(text: str, name: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"| {name}"))
    return [c.strip() for c in line.strip("|").split("|")]


def csv_row(text: str) -> dict:
    return next(csv.DictReader(io.StringIO(text)))


def latex_row(text: str, name: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(name))
    return [c.strip() for c in line.removesuffix(r"\\").split("&")]


def page_boards(run_dir) -> list[dict]:
    page = render_page([load_run(run_dir)])
    data = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S).group(1)
    return json.loads(data)["runs"][0]["boards"]


class Judge:
    """An in-process judge client: Solved, except no verdict at all (a reply without the tool call) for the
    queries whose text holds ``silent``; ``asked`` counts the requests."""

    name = "test-judge"
    supports_tools = True

    def __init__(self, silent: str | None = None):
        self.silent, self.asked = silent, 0

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        self.asked += 1
        if self.silent and self.silent in json.dumps(messages):
            return {"role": "assistant", "content": "I cannot tell.", "tool_calls": None}
        arguments = json.dumps({"reason": "fine", "answer_status": "Solved"})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


def test_boards_print_no_number_over_zero_queries_in_every_format():
    rows = [ScoreRow("m", g, Score("SoPR", "upstream", 50.0, 0.0, 4, [50.0])) for g in GROUPS[:5]]
    rows.append(ScoreRow("m", "G3_instruction", Score("SoPR", "upstream", 0.0, 0.0, 0, [])))  # nothing judged
    rows += [ScoreRow("m", g, Score("SoPR", "strict", 25.0, 0.0, 8, [25.0], missing=4)) for g in GROUPS[:5]]
    rows.append(ScoreRow("m", "G3_instruction", Score("SoPR", "strict", 0.0, 0.0, 6, [0.0], missing=6)))
    rows.append(ScoreRow("m", "G1_tool", Score("SoWR", "upstream", 0.0, n=0), reference="r"))
    upstream, strict, sowr = build_leaderboards(rows)
    md = to_markdown(upstream)
    assert md_row(md, "m") == ["m", "50.0", "50.0", "50.0", "50.0", "50.0", "–", "50.0*"]
    assert "– m: no score in I3 Inst (0 queries judged)" in md
    assert "* m: Average over 5 of 6 groups" in md
    assert "m: n = I1 Inst 4, I1 Cat 4, I1 Tool 4, I2 Cat 4, I2 Inst 4, I3 Inst 0 queries judged" in md
    cells = csv_row(to_csv(upstream))
    assert cells["I3 Inst"] == "" and cells["n I3 Inst"] == "0" and cells["groups averaged"] == "5"
    assert cells["I1 Inst"] == "50.0" and cells["n I1 Inst"] == "4"
    latex = to_latex(upstream)
    assert latex_row(latex, "m")[6:] == ["--", "50.0*"] and "no score in I3 Inst" in latex
    # strict: every test id of I3 Inst unanswered is a score of 0.0 over its 6 test ids, and the Average counts it
    md = to_markdown(strict)
    assert md_row(md, "m")[6:] == ["0.0", "20.8"]
    assert "I3 Inst 0 of 6 test ids with an answer" in md and "Average = mean of the 6 group cells." in md
    assert "no score" not in md
    # SoWR over no ids
    md = to_markdown(sowr)
    assert md_row(md, "m vs r")[3] == "–" and "no score in I1 Tool (0 ids compared)" in md
    assert md_row(md, "m vs r")[-1] == "–" and "– m vs r: Average over 0 of 6 groups: no score" in md


def never_finishes(request):
    return Completion(text=None, tool_calls=[scripted_call(request.tools, 0)])  # a tool call every turn


def test_a_run_that_answers_nothing_scores_zero_over_its_judged_queries_and_says_so(tmp_path):
    """The model answers no query: each finished query is still judged (Unsolved, without asking the judge), as
    upstream does, so 0.0 is a score over n judged queries and every table says n and "0 answered"."""
    cfg = RunConfig(name="mute", out_root=str(tmp_path), backend="scripted", max_step=3)
    totals = Runner(cfg, backend=ScriptedBackend(never_finishes, natural_dialect="openai-tools"),
                    progress=False).run()["totals"]
    assert (totals["finished"], totals["valid"], totals["answered"]) == (6, 0, 0)
    judge = Judge()
    evaluate_run(tmp_path / "mute", judge, evaluate_times=1, cache_path=None, progress=False)
    assert judge.asked == 0  # an unanswered query is Unsolved by rule
    tables = choose_evaluation(tmp_path / "mute")[0].tables_dir  # tba evaluate keeps each judge's tables apart
    for mode, denominator in (("upstream", "I1 Inst 1, I1 Cat 1, I1 Tool 1, I2 Cat 1, I2 Inst 1, I3 Inst 1 "
                                           "queries judged"),
                              ("strict", "I1 Inst 1 of 1, I1 Cat 1 of 1, I1 Tool 1 of 1, I2 Cat 1 of 1, "
                                         "I2 Inst 1 of 1, I3 Inst 1 of 1 test ids with an answer")):
        md = (tables / f"leaderboard_sopr_{mode}.md").read_text()
        assert md_row(md, "mute")[1:] == ["0.0"] * 7
        assert f"mute (CoT@1): n = {denominator}" in md and "0 answered of 6 queries" in md
        assert "Average = mean of the 6 group cells." in md
        assert "0 answered of 6 queries" in (tables / f"leaderboard_sopr_{mode}.tex").read_text()
        assert csv_row((tables / f"leaderboard_sopr_{mode}.csv").read_text())["n I1 Inst"] == "1"
    assert all("0 answered of 6 queries" in board["footnote"] for board in page_boards(tmp_path / "mute"))


def test_a_group_without_a_verdict_prints_no_number_in_any_table_of_the_run(tmp_path):
    """A judge that gives no verdict on G1_tool's query (scored anyway): 0 of 0 there, in every table of the run."""
    cfg = RunConfig(name="gap", out_root=str(tmp_path), backend="scripted")
    Runner(cfg, backend=ScriptedBackend(), progress=False).run()
    run_dir = tmp_path / "gap"
    query = json.loads(next((run_dir / "G1_tool").glob("*.json")).read_text())["answer_generation"]["query"]
    evaluate_run(run_dir, Judge(silent=query), evaluate_times=1, cache_path=None, progress=False,
                 score_anyway=True)
    tables = choose_evaluation(run_dir, fallback=True)[0].tables_dir  # judgements failed: not complete, the latest
    for mode in ("upstream", "strict"):
        md = (tables / f"leaderboard_sopr_{mode}.md").read_text()
        row = md_row(md, "gap")
        assert row[3] == "–" and row[1:3] + row[4:7] == ["100.0"] * 5 and row[7] == "100.0*"
        # no verdict: a score over 0 of 0, or no score row at all; either way the footnote says it
        assert re.search(r"no score in I1 Tool \((no verdict, 1 judgement failed|nothing judged), 1 answered of 1 "
                         r"query\)", md)
        assert "Average over 5 of 6 groups" in md
        cells = csv_row((tables / f"leaderboard_sopr_{mode}.csv").read_text())
        assert cells["I1 Tool"] == "" and cells["groups averaged"] == "5"
        latex = (tables / f"leaderboard_sopr_{mode}.tex").read_text()
        assert latex_row(latex, "gap")[3] == "--" and "no score in I1 Tool" in latex
    for board in page_boards(run_dir):
        assert board["rows"][0][3] == "–" and "no score in I1 Tool" in board["footnote"]


def test_tba_table_and_reproduce_print_no_number_for_a_group_without_a_verdict(tmp_path, capsys, monkeypatch):
    """Released-style labels where every judgement of G1_category failed: upstream 0 of 0 (no score), strict a
    score (its test ids unanswered count Unsolved)."""
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    labels, ids = per_model_set(tmp_path)
    write_labels(labels / "my_model" / "G1_category.json", {"11": ["JudgeError"] * 2, "12": ["JudgeError"] * 2})
    out = tmp_path / "tables"
    assert main(["table", str(labels), "--test-ids", str(ids), "--out", str(out), "--no-png"]) == 0
    upstream = (out / "leaderboard_sopr_upstream.md").read_text()
    assert md_row(upstream, "my_model")[2] == "–" and "no score in I1 Cat (no verdict, 4 judgements failed)" in upstream
    assert csv_row((out / "leaderboard_sopr_upstream.csv").read_text())["I1 Cat"] == ""
    assert latex_row((out / "leaderboard_sopr_upstream.tex").read_text(), r"my\_model")[2] == "--"
    strict = (out / "leaderboard_sopr_strict.md").read_text()
    assert md_row(strict, "my_model")[2] == "0.0±0.0" and "no score" not in strict
    capsys.readouterr()
    assert main(["reproduce", "--labels", str(labels), "--test-ids", str(ids), "--leaderboard"]) == 0
    printed = capsys.readouterr().out
    board = printed.split("Leaderboards")[1].split("SoPR, strict")[0]
    assert md_row(board, "my_model")[2] == "–" and "– my_model: no score in I1 Cat (no verdict" in board
    assert "* my_model: Average over 5 of 6 groups, I1 over 2 of 3 groups" in board
    assert md_row(printed.split("**SoPR (upstream)")[1], "my_model")[2] == "–"  # --leaderboard's layout too


@pytest.mark.parametrize("score,reason", [
    (Score("SoPR", "upstream", 0.0, n=0), "0 queries judged"),
    (Score("SoPR", "strict", 0.0, n=0), "0 test ids"),
    (Score("SoPR", "upstream", 0.0, n=0, errors=3), "no verdict, 3 judgements failed"),
    (Score("FAC", "upstream", 0.0, n=0), "0 ids"),
])
def test_the_footnote_names_the_empty_denominator(score, reason):
    board = build_leaderboards([ScoreRow("m", "G1_tool", score)])[0]
    name = "m †" if score.errors else "m"  # failed judgements left out: the row is marked (tables.py)
    assert f"– {name}: no score in I1 Tool ({reason})" in to_markdown(board)
