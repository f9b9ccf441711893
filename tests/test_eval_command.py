"""Issue 33 item 10: `tba eval` (what `make eval` calls) checks everything before any model is loaded or any call is
made, in the order of what finding out costs: an unknown backend before a missing judge, a bad data path before
the model loads, the self-judge rule (tba evaluate's own) before the run. `--check-only` stops after the checks
(compare-parsers-live and compare-structured run it first).

Was: `make eval BACKEND=hff` said "needs a judge of its own" (make's JUDGE_CHECK ran first); `make eval
STB=<bad path>` loaded the model for 12-16 s before saying the path was wrong."""

from __future__ import annotations

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import FAST_RETRIES, solved

SMOLLM2 = "runners/configs/smollm2.yaml"



def test_an_unknown_backend_is_said_before_a_missing_judge(capsys, monkeypatch):
    monkeypatch.delenv("TBA_JUDGE_URL", raising=False)
    assert main(["eval", "--backend", "hff"]) == 2  # and no judge given: the openai judge's default has no URL
    err = capsys.readouterr().err
    assert "unknown backend 'hff'. Did you mean hf?" in err
    assert "judge" not in err


def test_a_bad_data_path_fails_before_the_model_loads(tmp_path, capsys, no_model_load):
    code = main(["eval", "--name", "x", "--out-root", str(tmp_path / "runs"), "--backend", "hf", "--config", SMOLLM2,
                 "--stb-root", str(tmp_path / "nope"), "--judge-backend", "hf"])
    assert code == 2
    assert "nope: StableToolBench checkout not found" in capsys.readouterr().err
    assert no_model_load == [] and not (tmp_path / "runs").exists()


def test_an_unknown_dialect_and_a_missing_tool_root_come_before_the_judge(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TBA_JUDGE_URL", raising=False)
    assert main(["eval", "--backend", "scripted", "--dialect", "toollama"]) == 2
    assert "unknown dialect 'toollama'. Did you mean toolllama?" in capsys.readouterr().err
    assert main(["eval", "--backend", "scripted", "--tool-root", str(tmp_path / "tools")]) == 2
    assert "--tool-root" in capsys.readouterr().err


def test_the_self_judge_rule_refuses_before_any_model_call(tmp_path, capsys):
    with OpenAIStandin(models=("m",), respond=solved) as endpoint:
        code = main(["eval", "--name", "x", "--out-root", str(tmp_path), "--backend", "openai-chat", "--base-url",
                     endpoint.url, "--model", "Org/M", "--dialect", "openai-tools", "--judge-url", endpoint.url,
                     "--judge-model", "m"])
        assert code == 2
        assert endpoint.count() == 0 and not endpoint.probes  # neither the model nor the judge was asked
    err = capsys.readouterr().err
    assert "is the run's own model" in err and "--judge-self" in err


def test_check_only_checks_and_runs_nothing(tmp_path, capsys, no_model_load):
    code = main(["eval", "--check-only", "--name", "x", "--out-root", str(tmp_path / "runs"), "--backend", "hf",
                 "--config", SMOLLM2, "--tool-root", "data/sample/toolenv/tools", "--constrain", "schema",
                 "--judge-backend", "hf"])
    assert code == 0
    assert "every check passed (backend hf, 6 queries, judge hf)" in capsys.readouterr().out
    assert no_model_load == [] and not (tmp_path / "runs").exists()


def test_eval_runs_evaluates_and_prints_the_tables(tmp_path, capsys):
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        code = main(["eval", "--name", "r", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet",
                     "--judge-url", judge.url, "--judge-model", judge.model, "--evaluate-times", "1",
                     "--judge-cache", str(tmp_path / "cache.jsonl"), *FAST_RETRIES])
    assert code == 0
    out = capsys.readouterr().out
    assert "finished 6: valid 6, answered 6" in out  # the run's summary
    assert "**SoPR (upstream)" in out and "| r (CoT@1) | 100.0" in out  # the evaluation's leaderboard
    assert "labels: 6 labels: 0 by rule (no Finish or no final answer), 6 by the judge, all gave a verdict" in out
    assert (tmp_path / "r" / "evaluations.json").exists()
    assert "next: tba evaluate" not in out  # tba eval evaluates now: no command to type next


def test_a_dead_judge_or_one_serving_another_model_is_said_before_the_run(tmp_path, capsys):
    """An openai judge that cannot be reached, or that serves another model, is found by one GET /models before
    the run (not after hours of it): exit 2, no run folder, no model call."""
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        url = judge.url
        code = main(["eval", "--name", "r", "--out-root", str(tmp_path / "runs"), "--backend", "scripted",
                     "--judge-url", url, "--judge-model", "judge-b", *FAST_RETRIES])
        assert code == 2 and judge.count() == 0
    assert "judge model 'judge-b' is not served" in capsys.readouterr().err
    code = main(["eval", "--name", "r", "--out-root", str(tmp_path / "runs"), "--backend", "scripted",
                 "--judge-url", url, "--judge-model", "judge-a", *FAST_RETRIES])  # the standin has stopped
    assert code == 2 and "cannot be reached" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
