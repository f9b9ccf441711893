"""tba run --agent CMD: an outside agent speaking plain MCP over HTTP (tests/agents/plain_http_agent.py, no SDK) on
the sample queries, its tools served by the official MCP SDK over the embedded tool server; each outcome loud and
recorded (crash, no Finish, timeout, flood, unknown function, malformed requests, a command that does not exist)."""

from __future__ import annotations

import json
import shlex
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.test_judge_failures import FAST_RETRIES, solved
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset

AGENT = shlex.join([sys.executable, str(Path(__file__).parent / "agents" / "plain_http_agent.py")])
GROUPS = ["--groups", "G1_instruction", "G1_category", "G1_tool"]  # one evaluated sample query each


def run_agent(tmp_path, monkeypatch, mode: str = "", *extra: str, name: str = "a") -> tuple[int, Path, Path]:
    log = tmp_path / f"log-{name}"
    log.mkdir(exist_ok=True)
    monkeypatch.setenv("TBA_TEST_LOG", str(log))
    monkeypatch.setenv("TBA_TEST_MODE", mode)
    code = main(["run", "--name", name, "--out-root", str(tmp_path / "runs"), "--agent", AGENT, "--quiet", *extra])
    return code, tmp_path / "runs" / name, log


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_three_queries_answered_listed_recorded_and_judged(tmp_path, monkeypatch, capsys):
    """The issue's "done when": three queries, exit 0, three answer files with the agent's final answers, the
    tools it listed = each query's function names + Finish, its calls in steps.jsonl, judged with the agent named."""
    code, run, log = run_agent(tmp_path, monkeypatch, "", *GROUPS, "--concurrency", "3")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "3 called Finish" in out
    answers = sorted(run.glob("G1_*/*_CoT@1.json"))
    assert len(answers) == 3
    steps = lines(run / "steps.jsonl")
    for path in answers:
        group, qid = path.parent.name, int(path.name.split("_")[0])
        data = json.loads(path.read_text())
        generation = data["answer_generation"]
        assert generation["valid_data"] is True and f"answer to query {qid}" in generation["final_answer"]
        query = next(q for q in QuerySet(None).load(group) if q.query_id == qid)
        toolset = build_toolset(query, "current")
        listed = json.loads((log / f"{group}_{qid}.json").read_text())
        assert listed["tools"] == toolset.names and listed["tools"][-1] == "Finish"
        # the run's parameters, less upstream's empty names in required/optional (mcp_host.input_schema)
        sent = {f["name"]: f["parameters"] for f in toolset.inner_functions}
        assert listed["schemas"] == {name: {**p, **{k: [n for n in p[k] if n] for k in ("required", "optional")
                                                    if k in p}} for name, p in sent.items()}
        assert any("" in p.get("required", []) for p in sent.values())  # so the difference was there to drop
        assert generation["function"] == toolset.functions  # the answer file stores what was served
        calls = [s for s in steps if s["group"] == group and s["query_id"] == qid]
        assert [s["call"] for s in calls] == [toolset.names[0], "Finish"]
        assert calls[0]["status"] == 0 and calls[0]["reply_kind"] == "ok" and calls[1]["status"] == 3
        # the reply the agent got is the observation the run recorded
        assert listed["replies"][0]["content"][0]["text"] == data["trys"][0]["chain"][1]["observation"]
    records = lines(run / "queries.jsonl")
    assert {r["agent_outcome"] for r in records} == {"finish"} and all(r["agent_tools_listed"] == 1 for r in records)
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["config"]["agent"] == AGENT and manifest["config"]["backend"] == "agent"
    with OpenAIStandin(models=("judge-a",), respond=solved) as judge:
        code = main(["evaluate", str(run), "--judge-url", judge.url, "--judge-model", judge.model,
                     "--evaluate-times", "1", "--cache", str(tmp_path / "judge.jsonl"), "--quiet", *FAST_RETRIES])
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"outside agent {AGENT} over MCP" in out  # the comparability line names the agent, not a method
    assert "not comparable with the StableToolBench leaderboard" in out


def test_a_crashing_agent_is_an_infrastructure_failure_named_with_its_status_and_stderr(tmp_path, monkeypatch,
                                                                                       capsys):
    code, run, _ = run_agent(tmp_path, monkeypatch, "crash", "--groups", "G1_instruction", "--limit", "1")
    out = capsys.readouterr().out
    assert code == 3
    assert "outside_agent 1" in out
    error = lines(run / "errors.jsonl")[0]
    assert error["failure_kind"] == "outside_agent"
    assert AGENT in error["failure_detail"] and "status 1" in error["failure_detail"]
    assert "crashing on purpose" in error["failure_detail"]
    assert not list(run.glob("G1_instruction/*.json"))  # no answer file: a rerun redoes it
    record = lines(run / "queries.jsonl")[0]
    assert "crashing on purpose" in record["agent_stderr_tail"] and "now crashing" in record["agent_stdout_tail"]


def test_an_outside_agents_model_calls_are_not_seen_not_counted_as_its_tool_calls(tmp_path, monkeypatch, capsys):
    """The harness sees an outside agent's tool calls, never its model's: before, the run's cost line and the cost
    figures said "1 model calls" and "0.0 prompt tokens per query" (its tool call counted as a model call)."""
    from toolbench_adapter.runs.cost import NOT_SEEN, run_cost

    code, run, _ = run_agent(tmp_path, monkeypatch, "", "--groups", "G1_instruction", "--limit", "1")
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"cost: model calls, tokens and latency {NOT_SEEN}" in out and "model calls (" not in out
    cost = run_cost(run)
    assert cost.model_calls is None and cost.prompt_tokens is None and not cost.latencies
    assert f"model calls {NOT_SEEN}" in cost.text() and "tokens per query not recorded" in cost.text()
    assert cost.csv_cells()["model calls per query"] == "" and cost.csv_cells()["prompt tokens per query"] == ""


def test_no_finish_is_an_answer_without_a_final_answer(tmp_path, monkeypatch, capsys):
    code, run, _ = run_agent(tmp_path, monkeypatch, "no_finish", "--groups", "G1_instruction", "--limit", "1")
    assert code == 0
    assert "1 exited without Finish" in capsys.readouterr().out
    data = json.loads(next(run.glob("G1_instruction/*_CoT@1.json")).read_text())
    assert data["answer_generation"]["valid_data"] is False and data["answer_generation"]["final_answer"] == ""
    record = lines(run / "queries.jsonl")[0]
    assert record["agent_outcome"] == "no_finish" and record["answered"] is False and record["outcome"] == "finished"


def test_a_timeout_is_its_own_outcome(tmp_path, monkeypatch, capsys):
    code, run, _ = run_agent(tmp_path, monkeypatch, "sleep", "--groups", "G1_instruction", "--limit", "1",
                             "--agent-timeout", "1")
    assert code == 0
    assert "1 timed out (--agent-timeout 1.0 s" in capsys.readouterr().out
    record = lines(run / "queries.jsonl")[0]
    assert record["agent_outcome"] == "timeout" and record["agent_stopped"] == "timeout"
    assert record["wall_seconds"] < 15


def test_a_flood_of_calls_is_refused_at_the_cap_and_the_agent_stopped(tmp_path, monkeypatch, capsys):
    code, run, log = run_agent(tmp_path, monkeypatch, "flood", "--groups", "G1_instruction", "--limit", "1",
                               "--max-step", "4")
    assert code == 0
    record = lines(run / "queries.jsonl")[0]
    assert record["agent_outcome"] == "call_cap" and record["agent_calls"] == 4
    assert record["agent_refused_calls"] >= 1
    steps = lines(run / "steps.jsonl")
    assert [s.get("refused") for s in steps][-1] == "call_cap" and sum(1 for s in steps if s["status"] == 0) == 4
    replies = json.loads(next(log.glob("*.json")).read_text())["replies"]
    assert replies[-1]["isError"] is True and "budget of 4 tool calls" in replies[-1]["content"][0]["text"]


def test_a_function_the_query_lacks_gets_the_runs_no_such_function_reply(tmp_path, monkeypatch):
    code, run, log = run_agent(tmp_path, monkeypatch, "unknown", "--groups", "G1_instruction", "--limit", "1")
    assert code == 0
    reply = json.loads(next(log.glob("*.json")).read_text())["replies"][0]
    assert reply["isError"] is True and reply["_meta"]["toolbench_adapter/status"] == 1
    assert "no_such_function_here" in reply["content"][0]["text"]
    first = lines(run / "steps.jsonl")[0]
    assert first["call"] == "no_such_function_here" and first["status"] == 1 and first["source"] == "lookup"


def test_malformed_mcp_requests_are_answered_and_counted(tmp_path, monkeypatch):
    code, run, _ = run_agent(tmp_path, monkeypatch, "garbage", "--groups", "G1_instruction", "--limit", "1")
    assert code == 0
    record = lines(run / "queries.jsonl")[0]
    assert record["mcp_errors"] == 2 and record["agent_outcome"] == "finish"
    assert {d["http_status"] for d in record["mcp_error_details"]} <= {200, 400}


def test_a_command_that_does_not_exist_is_refused_before_anything_is_written(tmp_path, capsys):
    code = main(["run", "--name", "x", "--out-root", str(tmp_path), "--agent", "no-such-agent-program --flag",
                 "--quiet"])
    assert code == 2
    assert "agent command not found: 'no-such-agent-program'" in capsys.readouterr().err
    assert not (tmp_path / "x" / "manifest.json").exists()


def test_a_rerun_skips_finished_queries_and_another_agent_is_another_run(tmp_path, monkeypatch, capsys):
    code, run, log = run_agent(tmp_path, monkeypatch, "", *GROUPS[:3])
    assert code == 0 and len(list(log.glob("*.json"))) == 2
    for path in log.glob("*.json"):
        path.unlink()
    code, run, log = run_agent(tmp_path, monkeypatch, "", *GROUPS[:3])
    assert code == 0 and not list(log.glob("*.json"))  # resumed: no agent started again
    assert "0 ran now, 2 already done" in capsys.readouterr().out
    code = main(["run", "--name", "a", "--out-root", str(tmp_path / "runs"), "--agent", AGENT + " --other",
                 "--quiet", *GROUPS[:3]])
    assert code == 2  # another agent in the same folder: another run, refused
    assert "agent" in capsys.readouterr().err


def test_an_unknown_session_path_is_404_never_another_querys_world(tmp_path):
    from runners.outside.mcp_host import McpHost

    host = McpHost.shared()
    request = urllib.request.Request(f"{host.url}/q/not-a-session/mcp", data=b"{}", method="POST",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 404
    assert "no open query session" in caught.value.read().decode()


@pytest.mark.parametrize("settings, says", [
    ({"agent": "x", "backend": "openai-chat"}, "leave --backend out"),
    ({"agent": "x", "method": "DFS_woFilter_w2"}, "one chain of calls"),
    ({"agent": "'unclosed"}, "cannot be split"),
    ({"backend": "agent"}, "no command given"),
])
def test_settings_an_outside_agent_cannot_take_are_refused(settings, says):
    from runners.config import RunConfig
    from toolbench_adapter.errors import InputError

    with pytest.raises(InputError, match=says):
        RunConfig(**settings).validate()


def test_serve_tools_records_a_client_by_hand_as_a_run(tmp_path, monkeypatch):
    """tba serve-tools' driver: the URL told as the session opens, a client (the plain agent, run by the test)
    calls a tool and Finish, the run ends with the answer file written and the agent named "by hand"."""
    import subprocess
    import threading

    from runners.cli.commands.serve_tools import AGENT as BY_HAND
    from runners.config import RunConfig
    from runners.execution.runner import Runner
    from runners.models.outside_agent import OutsideAgentBackend
    from runners.outside.drive import ByHand

    urls = []
    cfg = RunConfig(name="hand", out_root=str(tmp_path), groups=["G1_instruction"], agent=BY_HAND)
    runner = Runner(cfg, backend=OutsideAgentBackend(model=BY_HAND), progress=False,
                    outside=ByHand(on_open=lambda query, url: urls.append(url)))
    done = threading.Thread(target=runner.run)
    done.start()
    for _ in range(200):
        if urls:
            break
        done.join(0.05)
    assert urls, "no session opened"
    env = {**__import__("os").environ, "TBA_MCP_URL": urls[0], "TBA_QUERY": "q", "TBA_QUERY_ID": "900001",
           "TBA_GROUP": "G1_instruction", "TBA_TEST_MODE": ""}
    subprocess.run(shlex.split(AGENT), env=env, check=True, timeout=60)
    done.join(30)
    assert not done.is_alive()
    data = json.loads((tmp_path / "hand" / "G1_instruction" / "900001_CoT@1.json").read_text())
    assert data["answer_generation"]["valid_data"] is True
    assert lines(tmp_path / "hand" / "queries.jsonl")[0]["agent_outcome"] == "finish"
    manifest = json.loads((tmp_path / "hand" / "manifest.json").read_text())
    assert manifest["setup_facts"]["method"]["agent"] == BY_HAND


def test_an_agent_that_never_reaches_its_mcp_url_is_an_infrastructure_failure(tmp_path, capsys):
    """`tba run --agent true`: an agent that exits 0 without one request to its session (a wrong URL, an agent that
    ignores TBA_MCP_URL) answered nothing; before, each query read as Unsolved by rule and the run exited 0."""
    silent = shlex.join([sys.executable, "-c", "pass"])
    code = main(["run", "--name", "silent", "--out-root", str(tmp_path / "runs"), "--agent", silent, "--quiet",
                 "--groups", "G1_instruction", "--limit", "1"])
    assert code == 3, capsys.readouterr()
    run = tmp_path / "runs" / "silent"
    error = lines(run / "errors.jsonl")[0]
    assert error["failure_kind"] == "outside_agent" and "without one request to its MCP URL" in error["failure_detail"]
    assert not list(run.glob("G1_instruction/*.json"))  # no answer file: a rerun redoes it
