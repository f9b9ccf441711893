"""The shipped example agents (examples/agents/) end to end offline: each run by `tba run --agent` on the sample
queries, its model a scripted OpenAI-compatible chat endpoint on loopback (call the first tool, then Finish)."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin, Reply

GROUPS = ["--groups", "G1_instruction", "G1_tool"]


def scripted_model(endpoint: str, body: dict) -> Reply:
    """A chat model that calls the first listed tool with its required arguments, then Finish."""
    tools = body.get("tools") or []
    if not tools:
        return Reply(text="no tools")
    if any(m.get("role") == "tool" for m in body["messages"]):
        call = {"name": "Finish", "arguments": json.dumps({"return_type": "give_answer",
                                                          "final_answer": "the example agent's answer"})}
    else:
        first = next(t["function"] for t in tools if t["function"]["name"] != "Finish")
        required = [r for r in first["parameters"].get("required", []) if r]
        call = {"name": first["name"], "arguments": json.dumps({k: "Lisbon" for k in required})}
    turn = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    return Reply(tool_calls=[{"id": f"call_{turn}", "type": "function", "function": call}], finish_reason="tool_calls")


@pytest.mark.parametrize("script, needs", [("mcp_chat_agent.py", "mcp"), ("openai_agents_sdk_agent.py", "agents")])
def test_example_agent_answers_through_mcp(tmp_path, monkeypatch, capsys, project_root, script, needs):
    pytest.importorskip(needs, reason=f"{needs} is the agents extra: pip install -e '.[agents]'")
    command = shlex.join([sys.executable, str(project_root / "examples" / "agents" / script)])
    with OpenAIStandin(models=("agent-model",), respond=scripted_model) as endpoint:
        monkeypatch.setenv("TBA_AGENT_BASE_URL", endpoint.url)
        monkeypatch.setenv("TBA_AGENT_MODEL", "agent-model")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        code = main(["run", "--name", "ex", "--out-root", str(tmp_path), "--agent", command, "--quiet",
                     "--agent-timeout", "120", *GROUPS])
        asked = endpoint.count()
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2 called Finish" in out
    assert asked >= 4  # two queries, two model turns each: the agent asked the endpoint, not a shortcut
    for path in (tmp_path / "ex").glob("G1_*/*_CoT@1.json"):
        generation = json.loads(path.read_text())["answer_generation"]
        assert generation["valid_data"] and "the example agent's answer" in generation["final_answer"]
    steps = [json.loads(line) for line in (tmp_path / "ex" / "steps.jsonl").read_text().splitlines()]
    assert [s["status"] for s in steps] == [0, 3, 0, 3]
