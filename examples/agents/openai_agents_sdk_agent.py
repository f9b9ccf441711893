"""An outside agent on the OpenAI Agents SDK (``openai-agents``) with its MCP support: the query's tools come from
``MCPServerStreamableHttp`` at TBA_MCP_URL, the model is any OpenAI-compatible chat endpoint.

    tba run --agent 'python examples/agents/openai_agents_sdk_agent.py' --name my-sdk-agent
    (TBA_AGENT_BASE_URL, e.g. http://127.0.0.1:8000/v1 of `tba serve-model`, TBA_AGENT_MODEL, OPENAI_API_KEY)

The agent runs until it calls Finish (the SDK stops at that tool) or the model stops calling tools
(TBA_AGENT_MAX_TURNS, default 12)."""

from __future__ import annotations

import asyncio
import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

INSTRUCTIONS = ("Answer the user's query with the tools you are given. When you have the answer, call Finish with "
                "return_type give_answer and your final_answer (or give_up_and_restart), then stop.")


async def main() -> int:
    set_tracing_disabled(True)  # no traces sent anywhere: the harness records every call itself
    client = AsyncOpenAI(base_url=os.environ.get("TBA_AGENT_BASE_URL", "http://127.0.0.1:8000/v1"),
                         api_key=os.environ.get("OPENAI_API_KEY") or "none")
    model = OpenAIChatCompletionsModel(model=os.environ.get("TBA_AGENT_MODEL", "model"), openai_client=client)
    # a tool's failure shown to the model (and in the run's records) as it is, not as the SDK's fixed text
    async with MCPServerStreamableHttp(params={"url": os.environ["TBA_MCP_URL"]}, name="stabletoolbench",
                                       client_session_timeout_seconds=120,
                                       failure_error_function=lambda _ctx, exc: f"{type(exc).__name__}: {exc}") as server:
        # the run ends at Finish: the SDK stops there instead of asking the model again
        agent = Agent(name="stabletoolbench-agent", instructions=INSTRUCTIONS, model=model, mcp_servers=[server],
                      tool_use_behavior={"stop_at_tool_names": ["Finish"]})
        try:
            await Runner.run(agent, os.environ["TBA_QUERY"], max_turns=int(os.environ.get("TBA_AGENT_MAX_TURNS", "12")))
        except Exception as exc:  # noqa: BLE001 (the SDK's MaxTurnsExceeded and friends: the calls are recorded)
            if type(exc).__name__ != "MaxTurnsExceeded":
                raise
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
