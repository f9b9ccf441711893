"""An outside agent on the official MCP client SDK (``mcp.Client``) and an OpenAI-compatible chat model.

    tba run --agent 'python examples/agents/mcp_chat_agent.py' --name my-agent
    (the model: TBA_AGENT_BASE_URL, e.g. http://127.0.0.1:8000/v1 of `tba serve-model`, TBA_AGENT_MODEL, and
    OPENAI_API_KEY when the endpoint wants one)

It reads its query's MCP URL and text from TBA_MCP_URL and TBA_QUERY, lists the tools, and loops: the model is
asked with the tools; each tool call it makes goes to the MCP server and its reply back to the model; it stops
when Finish has been called, the model makes no call, or after TBA_AGENT_MAX_TURNS turns (default 12)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request

from mcp import Client

SYSTEM = ("You answer the user's query with the tools you are given. Call them as you need; when you have the "
          "answer, call Finish with return_type give_answer and your final_answer (or give_up_and_restart).")


def chat(messages: list[dict], tools: list[dict]) -> dict:
    """One chat completion (plain HTTP: any OpenAI-compatible endpoint), its first choice's message."""
    base = os.environ.get("TBA_AGENT_BASE_URL", "http://127.0.0.1:8000/v1").rstrip("/")
    body = {"model": os.environ.get("TBA_AGENT_MODEL", "model"), "messages": messages, "tools": tools,
            "temperature": 0}
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['OPENAI_API_KEY']}"
    request = urllib.request.Request(f"{base}/chat/completions", data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=float(os.environ.get("TBA_AGENT_TIMEOUT", "120"))) as reply:
        return json.loads(reply.read())["choices"][0]["message"]


async def main() -> int:
    async with Client(os.environ["TBA_MCP_URL"]) as client:
        listed = await client.list_tools()
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description or "",
                                                   "parameters": t.input_schema}} for t in listed.tools]
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": os.environ["TBA_QUERY"]}]
        for _ in range(int(os.environ.get("TBA_AGENT_MAX_TURNS", "12"))):
            message = await asyncio.to_thread(chat, messages, tools)
            calls = message.get("tool_calls") or []
            messages.append({"role": "assistant", "content": message.get("content") or "", "tool_calls": calls})
            if not calls:
                return 0
            for call in calls:
                name = call["function"]["name"]
                try:
                    arguments = json.loads(call["function"].get("arguments") or "{}")
                except ValueError:
                    arguments = {}
                result = await client.call_tool(name, arguments if isinstance(arguments, dict) else {})
                text = "".join(getattr(block, "text", "") for block in result.content)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": text})
                if name == "Finish" and not result.is_error:
                    return 0
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
