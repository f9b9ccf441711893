"""Issue 33 item 5: the cards count the labels upstream's rule gives without a judge call (an answer with no
Finish is Unsolved) apart from the judge's verdicts, and "answered" means one thing on every card.

Was: a run whose 18 labels were all Unsolved by rule had a report card saying "every judgement gave a verdict"
and `tba evaluate` printed nothing about it; the strict SoPR card said "6 of 6 test ids answered" beside the run
summary's "answered 0" (a give_answer)."""

from __future__ import annotations

import json
from pathlib import Path

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.base import Completion
from runners.models.scripted import ScriptedBackend, scripted_call
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import FAST_RETRIES, solved
from toolbench_adapter.evaluation.scoring.counts import DEFINITIONS, count_labels
from toolbench_adapter.protocol.evaluation import NO_ANSWER_REASON
from toolbench_adapter.report.html import _run_payload
from toolbench_adapter.report.run_data import load_run

NO_FINISH_IDS = {900001}  # G1_instruction's sample query never reaches Finish


def script(request):
    """The scripted agent, except that query 900001 calls its first function on every turn (never Finish)."""
    turn = len(request.key.get("path", []))
    if request.key.get("query_id") in NO_FINISH_IDS:
        turn = 0
    return Completion(text=None, tool_calls=[scripted_call(request.tools, turn)])


def run_with_one_unfinished(tmp_path: Path) -> Path:
    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="openai-tools")
    Runner(cfg, backend=ScriptedBackend(script=script), progress=False).run()
    return tmp_path / "r"


def test_count_labels_says_rule_labels_apart_and_no_verdict_claimed_without_a_judge_call():
    only_rule = count_labels([("AnswerStatus.Unsolved", NO_ANSWER_REASON)] * 18)
    assert (only_rule.by_rule, only_rule.by_judge) == (18, 0)
    assert only_rule.text() == "18 labels: 18 by rule (no Finish or no final answer), 0 by the judge, no judge call"
    mixed = count_labels([("AnswerStatus.Unsolved", NO_ANSWER_REASON)] * 3 + [("AnswerStatus.Solved", "ok")] * 15)
    assert mixed.text() == "18 labels: 3 by rule (no Finish or no final answer), 15 by the judge, all gave a verdict"
    failed = count_labels([("AnswerStatus.Solved", "ok"), ("JudgeError", "")])
    assert (failed.by_judge, failed.failed) == (2, 1) and "1 without a verdict" in failed.text()


def test_evaluate_and_the_report_card_count_rule_labels_apart(tmp_path, capsys):
    run_dir = run_with_one_unfinished(tmp_path)
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        code = main(["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", judge.model, "--quiet",
                     "--evaluate-times", "3", "--cache", str(tmp_path / "cache.jsonl"), *FAST_RETRIES])
    assert code == 0
    out = capsys.readouterr().out
    # the 6 sample queries x 3 repeats: 900001 has no Finish (3 labels by rule), the 5 others are judged
    expected = "18 labels: 3 by rule (no Finish or no final answer), 15 by the judge, all gave a verdict"
    assert f"labels: {expected}" in out
    evaluation = json.loads(next((run_dir / "eval").glob("*/evaluation.json")).read_text())
    assert evaluation["labels"]["by_rule"] == 3
    payload = _run_payload(0, load_run(run_dir), [])
    assert payload["labelCounts"]["text"] == expected
    # the cards' words are evaluation/scoring/counts.py's, so "answered" is a give_answer on every card
    assert payload["headline"]["words"]["answered"] == DEFINITIONS["answered"]
    assert payload["headline"]["answered"] == 5
    capsys.readouterr()
    assert main(["table", str(run_dir), "--out", str(tmp_path / "tables"), "--no-png"]) == 0
    assert f"{run_dir}: {expected}" in capsys.readouterr().out  # tba table says it too


def test_no_card_uses_answered_for_an_answer_file():
    """The strict SoPR card and the run index counted "test ids answered" (an answer file): another number than
    the run summary's answered (a give_answer)."""
    root = Path(__file__).resolve().parents[1] / "toolbench_adapter" / "report"
    for path in (root / "html_assets" / "report.js", root / "run_index.py"):
        assert "test ids answered" not in path.read_text(), path


def test_every_leaderboard_caption_says_constrained_decoding_is_not_upstream():
    """`make eval`'s offline default decodes under a grammar (--constrain schema): every table says so."""
    from toolbench_adapter.evaluation.scoring.results import ScoreRow
    from toolbench_adapter.evaluation.scoring.scores import Score
    from toolbench_adapter.report import tables

    def row(model: str) -> ScoreRow:
        return ScoreRow(model, "G1_instruction", Score("SoPR", "upstream", 50.0, n=2, runs=[50.0]), "CoT@1", "j")

    board = tables.build_leaderboards([row("eval-hf-CoT1@constrain-schema")])[0]
    for text in (board.caption, tables.to_markdown(board), tables.to_latex(board)):
        assert "constrained decoding: schema (not upstream)" in text
    upstream = tables.build_leaderboards([row("eval-hf-CoT1")])[0]
    assert "constrained" not in upstream.caption
    mixed = tables.build_leaderboards([row("a@constrain-schema@reask-2"), row("b")])[0]
    assert "constrained decoding: schema (not upstream): a@constrain-schema@reask-2 (CoT@1)" in mixed.caption
    assert "re-ask on invalid calls: reask:2 (not upstream)" in mixed.caption


def test_a_run_named_for_its_settings_says_them_once_in_its_row():
    """make eval's RUN names constrain (eval-hf-CoT1-constrain-schema); the row said it twice
    (eval-hf-CoT1-constrain-schema@constrain-schema)."""
    from toolbench_adapter.structured.describe import row_name

    assert row_name("eval-hf-CoT1-constrain-schema", {"constrain": "schema"}) == "eval-hf-CoT1@constrain-schema"
    both = {"constrain": "schema", "on_invalid": "reask:2"}
    assert row_name("eval-x-CoT1-constrain-schema-reask-2", both) == "eval-x-CoT1@constrain-schema@reask-2"
    assert row_name("mine", both) == "mine@constrain-schema@reask-2"
    assert row_name("eval-hf-CoT1", {"constrain": "off"}) == "eval-hf-CoT1"
    # make eval's RUN now: the folder has the row's name, said once
    assert row_name("eval-x-CoT1@constrain-schema@reask-2", both) == "eval-x-CoT1@constrain-schema@reask-2"
