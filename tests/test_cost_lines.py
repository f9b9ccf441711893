"""Issue 41, item 1: where a number multiplies paid requests (judge repeats x answers, audit sizes, a sweep's cells
x judges), the command prints what it comes to before the first paid request: "N judge requests or more: ...",
as a range whose ends say what they are made of."""

from __future__ import annotations

import json

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import command_inputs, evaluate_args, scripted_run, solved
from tests.test_sweep import issue_spec, write
from toolbench_adapter.evaluation.judging.passrate import cost_line, request_range


def test_the_range_is_one_request_per_judgement_to_two_per_judgement_times_the_tries():
    assert request_range(18, 3) == (18, 108)
    line = cost_line(18, "6 answers x 3 repeats (--evaluate-times)")
    assert line.startswith("18 judge requests or more: 6 answers x 3 repeats (--evaluate-times) = 18 judgements")
    assert "at most 108" in line and "an Unsure verdict adds one" in line and "up to 3 tries" in line
    assert "1,000,000 judge requests or more" in cost_line(1_000_000, "x")


def test_tba_evaluate_says_the_cost_before_the_first_judgement(tmp_path, capsys):
    run_dir = scripted_run(tmp_path)  # six sample queries, each answered
    with OpenAIStandin(respond=solved) as judge:
        capsys.readouterr()
        assert main(evaluate_args(run_dir, judge, tmp_path / "c.jsonl", "--evaluate-times", "2")) == 0
    err = capsys.readouterr().err
    assert "12 judge requests or more: 6 answers x 2 repeats (--evaluate-times) = 12 judgements" in err
    assert "at most 72" in err


def test_tba_judge_and_prefer_say_the_cost(tmp_path, capsys):
    with OpenAIStandin(respond=solved) as judge:
        flags = ["--judge-url", judge.url, "--judge-model", judge.model, "--no-cache", "--no-progress",
                 "--evaluate-times", "4", "--attempts", "2"]
        assert main(["judge", *command_inputs(tmp_path, "judge"), *flags]) == 0
        assert "4 judge requests or more: 1 answers x 4 repeats (--evaluate-times) = 4 judgements" in \
            capsys.readouterr().err
        assert main(["prefer", *command_inputs(tmp_path, "prefer"), *flags]) == 0
    err = capsys.readouterr().err
    assert "8 judge requests or more: 1 queries x 4 rounds (--evaluate-times) = 4 rounds, 2 to 5 requests each" in err
    assert "at most 40" in err  # 4 rounds x 5 requests x 2 tries


def test_tba_eval_check_only_says_what_the_judging_will_cost(tmp_path, capsys):
    with OpenAIStandin(respond=solved) as judge:
        assert main(["eval", "--backend", "scripted", "--out-root", str(tmp_path), "--judge-url", judge.url,
                     "--judge-model", judge.model, "--evaluate-times", "5", "--check-only"]) == 0
    err = capsys.readouterr().err
    assert "30 judge requests or more: 6 query runs x 5 repeats (--evaluate-times), after the run = 30 judgements" in err


def test_a_sweep_says_what_each_judge_will_be_asked_before_any_cell(tmp_path, capsys):
    with OpenAIStandin(models=("judge-x",), respond=solved) as judge:
        spec = write(tmp_path, issue_spec(judge))
        assert main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    # 4 cells x 1 query (the sample's G1_instruction holds one) x evaluate_times 1
    assert "judge judge-x: 4 judge requests or more: 4 answers at most (4 cells' query runs) x 1 repeats" in out


def test_the_audit_plan_is_a_range_of_requests(tmp_path, capsys):
    with OpenAIStandin(respond=solved) as judge:
        assert main(["judge-audit", *command_inputs(tmp_path, "judge-audit"), "--judge-url", judge.url,
                     "--judge-model", judge.model, "--no-cache", "--no-progress", "--attempts", "4"]) == 0
    out = capsys.readouterr().out
    assert "1 to ask: 1 to 8 judge requests (one each, two for an Unsure verdict, up to 4 tries" in out
    assert json.loads((tmp_path / "out" / "audit.json").read_text())
