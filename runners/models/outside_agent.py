"""The backend of a run whose agent is an outside program (``tba run --agent CMD``, runners/outside/): it stands
where a model backend stands so the run's settings, identity and manifest read as any run's (``model`` is the
agent's command line), but it is never asked for a completion: the agent asks for the tools itself, over MCP."""

from __future__ import annotations

import os
import shlex
import shutil

from toolbench_adapter.errors import InputError

from .base import Completion, ModelRequest


def agent_argv(command: str) -> list[str]:
    """The argument list of ``command``; InputError (field ``agent``) for one that splits into nothing or not at
    all (an unclosed quote)."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InputError(f"agent command {command!r} cannot be split into arguments ({exc})", field="agent",
                         fix="quote the command as a shell would, e.g. --agent 'python my_agent.py --model m'") from None
    if not argv:
        raise InputError("agent command is empty", field="agent",
                         fix="pass --agent 'CMD ARGS', e.g. --agent 'python examples/agents/mcp_chat_agent.py'")
    return argv


def agent_label(command: str) -> str:
    """How tables and the comparability line name the agent: its command line, re-joined."""
    try:
        return shlex.join(shlex.split(command))
    except ValueError:
        return command


class OutsideAgentBackend:
    name = "agent"
    natural_dialect = "openai-tools"  # what the agent is shown: the function-call run's tools, as MCP tools
    supports_tools = True

    def __init__(self, command: str | None = None, model: str | None = None, **_ignored):
        self.command = command
        self.model = model or command  # what the manifest, tables and comparability name

    def preflight(self) -> None:
        """The command's program exists and can be run, or exit 2 naming it (before anything is written)."""
        if not self.command:  # tba serve-tools: a person's client, no command
            return
        program = agent_argv(self.command)[0]
        found = shutil.which(program)
        if found is None or not os.access(found, os.X_OK):
            raise InputError(f"agent command not found: {program!r} (from --agent {self.command!r})", field="agent",
                             fix="give a program on PATH or a path to an executable file, e.g. "
                             "--agent 'python examples/agents/mcp_chat_agent.py'")

    def complete(self, request: ModelRequest) -> Completion:
        raise RuntimeError("an outside agent asks for its tools over MCP; no completion is ever requested of it")
