"""Runs that differ in --on-invalid / --constrain / dialect, compared by tba compare-parsers --runs."""

import csv
import json

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models.scripted import ScriptedBackend

FINISH = 'Thought: done.\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "x"}'


def unknown_then_finish(request):
    text = request.prompt or json.dumps(request.messages)
    if "Your last reply could not be used" in text:
        return FINISH
    return "Thought: t\nAction: get_everything\nAction Input: {}"


class SolvedJudge:
    name = "solved-judge"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, **_):
        arguments = json.dumps({"reason": "ok", "answer_status": "Solved"})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                         "arguments": arguments}}]}


def judged_run(tmp_path, name, on_invalid):
    cfg = RunConfig(name=name, out_root=str(tmp_path), backend="scripted", dialect="toolllama", max_step=4,
                    on_invalid=on_invalid, tool_root="data/sample/toolenv/tools")
    Runner(cfg, backend=ScriptedBackend(script=unknown_then_finish), progress=False).run()
    evaluation = evaluate_run(tmp_path / name, SolvedJudge(), evaluate_times=1, progress=False,
                              cache_path=str(tmp_path / "judge.jsonl"))
    return evaluation


def test_runs_that_share_a_parser_are_named_by_their_policy(tmp_path, capsys):
    judged_run(tmp_path, "observe", "observe")
    reasked = judged_run(tmp_path, "reask", "reask:2")
    # the re-asking run's leaderboard row names its policy
    assert any("reask@reask-2" in " ".join(map(str, row)) for board in reasked.boards for row in board.body())
    out = tmp_path / "cmp"
    # the upstream setting is the baseline whatever the order given
    assert main(["compare-parsers", "--runs", str(tmp_path / "reask"), str(tmp_path / "observe"),
                 "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    # the first column is named by the axis the runs differ in (issue 33.8: not "parser", not "run")
    assert lines[0].split() == ["on-invalid", "valid", "turns", "valid", "answers", "calls/query", "tokens/query",
                                "s/query", "pass", "rate", "vs", "baseline", "(95%", "CI)", "flips", "up/down"]
    rows = {line.split("  ")[0]: line for line in lines[1:3]}
    # observe: one unknown call per turn, never finishes (2 turns); reask:2: one re-ask, then Finish
    assert "0.0% (0/12)" in rows["on-invalid=observe"] and "0/6" in rows["on-invalid=observe"]
    assert "baseline" in rows["on-invalid=observe"]
    assert "50.0% (6/12)" in rows["on-invalid=reask:2"] and "6/6" in rows["on-invalid=reask:2"]
    assert "+100.0 [+100.0, +100.0]" in rows["on-invalid=reask:2"] and "6/0" in rows["on-invalid=reask:2"]
    table = list(csv.DictReader((out / "runs.csv").open()))
    assert [r["on-invalid"] for r in table] == ["on-invalid=reask:2", "on-invalid=observe"]
    assert table[0]["calls_per_query"] == "2.00" and table[1]["calls_per_query"] == "2.00"
    assert (out / "runs.md").read_text().startswith("# Runs compared")


def test_a_run_whose_model_wrote_no_call_is_compared_not_folded(tmp_path, capsys):
    judged_run(tmp_path, "observe", "observe")
    cfg = RunConfig(name="silent", out_root=str(tmp_path), backend="scripted", dialect="json-object", max_step=2,
                    tool_root="data/sample/toolenv/tools")
    Runner(cfg, backend=ScriptedBackend(script=lambda request: "I cannot help."), progress=False).run()
    evaluate_run(tmp_path / "silent", SolvedJudge(), evaluate_times=1, progress=False,
                 cache_path=str(tmp_path / "judge.jsonl"))
    judged_run(tmp_path, "reask", "reask:2")
    assert main(["compare-parsers", "--runs", str(tmp_path / "observe"), str(tmp_path / "silent"),
                 str(tmp_path / "reask"), "--out", str(tmp_path / "cmp")]) == 0
    lines = capsys.readouterr().out.splitlines()
    silent = next(line for line in lines if line.startswith("json-object"))
    assert "0.0% (0/12)" in silent and "+0.0 [+0.0, +0.0]" in silent  # the model wrote no call: a result
    assert not any(line.startswith("read no call in any step") for line in lines)


def test_compare_runs_is_the_same_command_and_explains_the_pass_rate(tmp_path, capsys):
    judged_run(tmp_path, "observe", "observe")
    judged_run(tmp_path, "reask", "reask:2")
    runs = [str(tmp_path / "observe"), str(tmp_path / "reask")]
    assert main(["compare-runs", "--runs", *runs, "--out", str(tmp_path / "a")]) == 0
    renamed = capsys.readouterr().out
    assert main(["compare-parsers", "--runs", *runs, "--out", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.replace(str(tmp_path / "b"), "OUT") == renamed.replace(str(tmp_path / "a"), "OUT")
    # the footer: Unsure's half point and the zero-width interval on few queries, printed and in runs.md
    footer = next(line for line in renamed.splitlines() if line.startswith("Reading the pass rate on 6 queries"))
    assert "Unsure 0.5" in footer and "50% with no query passing" in footer and "zero width" in footer
    assert footer in (tmp_path / "a" / "runs.md").read_text()
    # here every query passes under reask:2 and none under observe: +100 points, 6 flips up, a zero-width interval
    assert "Here: on-invalid=reask:2 +100.0 points with flips 6/0, 95% CI [+100.0, +100.0]." in renamed


class ConstrainingScripted(ScriptedBackend):
    def constraint_support(self, dialect):
        return None


def test_a_constrained_runs_leaderboard_row_and_comparison_name_the_constraint(tmp_path, capsys):
    pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    plain = judged_run(tmp_path, "observe", "observe")
    cfg = RunConfig(name="schema", out_root=str(tmp_path), backend="scripted", dialect="toolllama", max_step=4,
                    constrain="schema", on_invalid="reask:2", tool_root="data/sample/toolenv/tools")
    Runner(cfg, backend=ConstrainingScripted(script=lambda request: FINISH), progress=False).run()
    constrained = evaluate_run(tmp_path / "schema", SolvedJudge(), evaluate_times=1, progress=False,
                               cache_path=str(tmp_path / "judge.jsonl"))
    assert {str(row[0]) for board in constrained.boards for row in board.body()} == {
        "schema@constrain-schema@reask-2 (CoT@1)"}
    assert {str(row[0]) for board in plain.boards for row in board.body()} == {"observe (CoT@1)"}  # upstream
    assert main(["compare-runs", "--runs", str(tmp_path / "observe"), str(tmp_path / "schema"),
                 "--out", str(tmp_path / "cmp")]) == 0
    rows = [line.split("  ")[0] for line in capsys.readouterr().out.splitlines()[1:3]]
    assert rows == ["constrain=off on-invalid=observe", "constrain=schema on-invalid=reask:2"]
