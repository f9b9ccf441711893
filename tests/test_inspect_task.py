"""StableToolBench as an inspect_ai task: `toolbench_adapter/stabletoolbench` found by inspect's registry (the entry
point), each sample's tools its query's functions over the embedded tool server, scored by this project's judge,
and with run=NAME a run folder that `tba evaluate` reads. Models: inspect's mockllm (scripted to call a tool, then
Finish; its usage given, since mockllm otherwise counts tokens with tiktoken's o200k_base file, a download) and an
OpenAI-compatible endpoint on loopback (tests/openai_standin.py), also the judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="inspect-ai is the agents extra: pip install -e '.[agents]'")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from runners.cli import main  # noqa: E402
from runners.inspect_eval import offline_tokens  # noqa: E402
from tests.openai_standin import OpenAIStandin, Reply  # noqa: E402
from tests.test_judge_failures import FAST_RETRIES, solved  # noqa: E402

TASK = "toolbench_adapter/stabletoolbench"
DEAD_JUDGE = "http://127.0.0.1:9/v1"  # nothing listens on the discard port


def scripted(messages, tools, tool_choice, config) -> ModelOutput:
    """Call the first function with its required example values, then Finish with an answer."""
    called = any(m.role == "tool" for m in messages)
    if called or not tools:
        output = ModelOutput.for_tool_call("mockllm/model", "Finish",
                                           {"return_type": "give_answer", "final_answer": "mock answer"})
    else:
        first = tools[0]
        arguments = {name: "x" for name in first.parameters.required}
        output = ModelOutput.for_tool_call("mockllm/model", first.name, arguments)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def test_the_task_is_found_by_name_and_writes_a_run_folder_tba_reads(tmp_path, capsys):
    model = get_model("mockllm/model", custom_outputs=scripted)
    logs = inspect_eval(TASK, model=model, limit=2, log_dir=str(tmp_path / "logs"), display="none",
                        task_args={"run": "ins", "out_root": str(tmp_path / "runs")})
    log = logs[0]
    assert log.status == "success", log.error
    assert log.eval.task == TASK
    run = tmp_path / "runs" / "ins"
    answers = sorted(run.glob("*/*_CoT@1.json"))
    assert len(answers) == 2
    for path in answers:
        generation = json.loads(path.read_text())["answer_generation"]
        assert generation["valid_data"] is True and "mock answer" in generation["final_answer"]
    steps = [json.loads(line) for line in (run / "steps.jsonl").read_text().splitlines()]
    assert [s["call"] for s in steps].count("Finish") == 2 and all(s["parser"] == "mcp" for s in steps)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["agent"] == "inspect_ai mockllm/model" and manifest["sessions"][-1].get("finished")
    # no judge named: no scorer, so no score at all (before: a 0 standing for "not judged" in inspect's mean)
    assert all(not sample.scores for sample in log.samples) and not log.results.scores
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        code = main(["evaluate", str(run), "--judge-url", judge.url, "--judge-model", judge.model,
                     "--evaluate-times", "1", "--cache", str(tmp_path / "judge.jsonl"), "--quiet", *FAST_RETRIES])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "outside agent inspect_ai mockllm/model over MCP" in out


def test_no_finish_is_unsolved_by_rule_without_a_judge(tmp_path):
    model = get_model("mockllm/model", custom_outputs=lambda *a: _with_usage(
        ModelOutput.from_content("mockllm/model", "I will not use tools")))
    log = inspect_eval(TASK, model=model, limit=1, log_dir=str(tmp_path / "logs"), display="none",
                       task_args={"judge_url": DEAD_JUDGE, "judge_model": "judge-a"})[0]  # never asked
    assert log.status == "success", log.error
    score = log.samples[0].scores["stabletoolbench_judge"]
    assert score.value == 0.0 and score.metadata["by"] == "rule" and score.metadata["label"] == "Unsolved"
    assert not (tmp_path / "runs").exists()  # no run= : no run folder


def _with_usage(output: ModelOutput) -> ModelOutput:
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def test_an_openai_compatible_endpoint_answers_and_judges(tmp_path, monkeypatch):
    """A model behind an OpenAI-compatible endpoint (inspect's openai-api provider at a loopback URL), judged by
    the project's judge at the same endpoint: the sample's label and reason in inspect's log."""
    turns = {"n": 0}

    def respond(endpoint: str, body: dict) -> Reply:
        if body.get("tool_choice") and isinstance(body["tool_choice"], dict):  # the judge's forced verdict
            return solved(endpoint, body)
        if not body.get("tools"):
            return solved(endpoint, body)
        turns["n"] += 1
        if any(m.get("role") == "tool" for m in body["messages"]):
            call = {"name": "Finish", "arguments": json.dumps({"return_type": "give_answer",
                                                              "final_answer": "the endpoint's answer"})}
        else:
            first = body["tools"][0]["function"]
            required = first["parameters"].get("required", [])
            call = {"name": first["name"], "arguments": json.dumps({k: "x" for k in required})}
        return Reply(tool_calls=[{"id": f"c{turns['n']}", "type": "function", "function": call}])

    with OpenAIStandin(models=("agent-model", "judge-a"), respond=respond) as endpoint:
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        model = get_model("openai-api/standin/agent-model", base_url=endpoint.url, api_key="test-key")
        log = inspect_eval(TASK, model=model, limit=1, log_dir=str(tmp_path / "logs"), display="none",
                           task_args={"judge_url": endpoint.url, "judge_model": "judge-a"})[0]
    assert log.status == "success", log.error
    score = log.samples[0].scores["stabletoolbench_judge"]
    assert score.metadata["label"] == "Solved" and score.metadata["by"] == "judge-a" and score.value == 1.0
    assert score.explanation.startswith("Solved: fine")
    assert turns["n"] == 2  # one call of a function, then Finish: the loop ended at Finish


def test_task_options_reach_the_selection(tmp_path):
    model = get_model("mockllm/model", custom_outputs=scripted)
    log = inspect_eval(TASK, model=model, log_dir=str(tmp_path / "logs"), display="none",
                       task_args={"groups": "G1_tool,G2_category", "data_root": str(Path("data/sample"))})[0]
    assert log.status == "success", log.error
    assert sorted(sample.id for sample in log.samples) == ["G1_tool/900004", "G2_category/900006"]


@pytest.mark.skipif(not (offline_tokens.INSTALLED_DIR / offline_tokens.CACHE_NAME).is_file(),
                    reason="tiktoken's o200k_base is not in this environment (make install puts it there)")
def test_the_issues_command_line_runs_offline_with_inspects_own_mockllm(tmp_path):
    """`inspect eval toolbench_adapter/stabletoolbench --model mockllm/model --limit 2 -T run=NAME` as written: plain
    mockllm counts tokens with tiktoken, which would download o200k_base; make install's copy is used instead."""
    env = {k: v for k, v in os.environ.items() if k != "TIKTOKEN_CACHE_DIR"}
    inspect = Path(sys.executable).with_name("inspect")
    result = subprocess.run([str(inspect), "eval", TASK, "--model", "mockllm/model", "--limit", "2",
                             "-T", "run=cli", "-T", f"out_root={tmp_path / 'runs'}", "--log-dir", str(tmp_path / "logs"),
                             "--display", "plain"],
                            capture_output=True, text=True, timeout=240, env=env, cwd=Path(__file__).parent.parent)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "o200k_base" not in result.stdout + result.stderr
    assert len(sorted((tmp_path / "runs" / "cli").glob("*/*_CoT@1.json"))) == 2


def test_the_encoding_is_refused_unless_its_digest_is_tiktokens(tmp_path):
    wheel = tmp_path / "litellm-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(offline_tokens.WHEEL_MEMBER, b"not the encoding")
    with pytest.raises(ValueError, match="not tiktoken's"):
        offline_tokens.extract(wheel, tmp_path / "out")
    assert not (tmp_path / "out" / offline_tokens.CACHE_NAME).exists()
    assert offline_tokens.main([str(wheel), str(tmp_path / "out")]) == 2


def test_a_judge_that_fails_gives_no_score_but_an_error_and_the_answer_is_kept(tmp_path):
    """A dead judge: before, each sample scored 0 (JudgeError counted as Unsolved) and inspect exited 0."""
    model = get_model("mockllm/model", custom_outputs=scripted)
    log = inspect_eval(TASK, model=model, limit=1, log_dir=str(tmp_path / "logs"), display="none",
                       task_args={"run": "dead", "out_root": str(tmp_path / "runs"), "judge_url": DEAD_JUDGE,
                                  "judge_model": "judge-a"})[0]
    assert log.status == "error" and "every judgement failed" in str(log.error), log.error
    assert len(list((tmp_path / "runs" / "dead").glob("*/*_CoT@1.json"))) == 1  # the agent's answer is kept


def test_the_score_is_the_mean_over_the_judged_repeats(monkeypatch):
    """One query's SoPR as tba evaluate computes it: Solved, Unsolved, (failed), Solved is 2/3, the failed
    judgement left out and counted; before, the most common label (1.0 here, 0 for Solved/Unsolved/Unsolved)."""
    from runners.inspect_eval import judging
    from toolbench_adapter.evaluation.judging.judge import Judgement
    from toolbench_adapter.evaluation.labels import Label

    labels = iter([Label.SOLVED, Label.UNSOLVED, Label.ERROR, Label.SOLVED])
    monkeypatch.setattr(judging, "judge_answer", lambda *a: Judgement(next(labels), "why"))
    monkeypatch.setattr(judging, "make_judge", lambda *a, **k: object())
    monkeypatch.setattr(judging, "converted_answer", lambda data: {"query": "q", "answer": {}})
    monkeypatch.setattr(judging, "early_judgement", lambda answer: None)
    result = judging.judge_session({}, {"url": "http://x/v1", "model": "m", "times": 4})
    assert result["value"] == pytest.approx(2 / 3) and result["failed_judgements"] == 1
    assert result["labels"] == ["Solved", "Unsolved", "JudgeError", "Solved"]
