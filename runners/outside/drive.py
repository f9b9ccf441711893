"""One query run by an outside agent: its session opened on the process's MCP server, the agent driven to its end,
the session closed into the query's answer file and outcome (what QueryRunner writes, as for any run).

Drivers (a run's ``RunSetup.outside``): ``CommandAgent`` runs ``tba run --agent CMD``'s command once per query;
``ByHand`` (tba serve-tools) prints the URL and waits for the client to call Finish or the run to stop; ``Stdio``
(tba serve-tools --stdio) serves one query over stdin/stdout.

How a query ends (queries.jsonl's ``agent_outcome``): ``finish`` (the agent called Finish and exited 0),
``no_finish`` (it exited 0 without Finish: an answer without a final answer, Unsolved by rule), ``timeout``
(--agent-timeout: stopped, the calls so far are its answer), ``call_cap`` (a call past max_step calls: refused,
the agent given GRACE_S to exit, then stopped). An agent that exits non-zero, cannot be started, or exits 0 without one request to its session
is an infrastructure failure naming the agent, its exit status and its stderr's tail (outside_agent: no answer file,
a rerun redoes the query)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ..failures import OUTSIDE_AGENT, InfraFailure
from ..models.outside_agent import agent_argv, agent_label
from ..search.agent import QueryContext
from .process import GRACE_S, run_agent
from .session import CALL_CAP, CLOSED, FINISH, QuerySession

STDERR_SHOWN = 800  # characters of an agent's stderr tail in a failure's detail (the record keeps more)


def open_session(setup: Any, toolset: Any, ctx: QueryContext, client: Any, roots: list) -> QuerySession:
    cfg = setup.cfg
    session = QuerySession(toolset, ctx, client, setup.compat, max_calls=cfg.max_step,
                           max_observation_length=cfg.max_observation_length)
    roots.append(session.root)
    return session


@contextmanager
def hosted_session(setup: Any, toolset: Any, ctx: QueryContext, client: Any, roots: list) -> Iterator[tuple]:
    """(session, url): the query's session served at a path of its own on the process's MCP host, the session
    and its path closed on leaving."""
    from .mcp_host import McpHost

    session = open_session(setup, toolset, ctx, client, roots)
    host = McpHost.shared()
    url = host.open(session, label=f"{toolset.query.group}-{toolset.query.query_id}")
    try:
        yield session, url
    finally:
        session.close()
        host.close(url)


def session_outcome(session: QuerySession, how: str | None = None) -> dict:
    """The fields an outside agent's query adds to its queries.jsonl line."""
    if how is None:
        how = {FINISH: "finish", CALL_CAP: "call_cap"}.get(session.ended or CLOSED, "no_finish")
    return {"agent_outcome": how, "agent_calls": session.ctx.budget.query_count, "agent_refused_calls": session.refused,
            "agent_tools_listed": session.listed, "mcp_errors": len(session.protocol_errors),
            **({"mcp_error_details": session.protocol_errors[:5]} if session.protocol_errors else {})}


def never_contacted(session: QuerySession) -> bool:
    """No tools/list, no call, no Finish, no malformed request: the agent never spoke to its session."""
    return (session.listed == 0 and session.ctx.budget.query_count == 0 and session.refused == 0
            and session.ended in (None, CLOSED) and not session.protocol_errors)


class CommandAgent:
    """``tba run --agent CMD``: CMD once per query, with TBA_MCP_URL, TBA_QUERY, TBA_QUERY_ID and TBA_GROUP."""

    def __init__(self, command: str, timeout_s: float):
        self.command = command
        self.argv = agent_argv(command)
        self.label = agent_label(command)
        self.timeout_s = timeout_s

    def run_query(self, setup: Any, toolset: Any, ctx: QueryContext, client: Any, roots: list,
                  stopping: Callable[[], bool] | None = None) -> dict:
        query = toolset.query
        with hosted_session(setup, toolset, ctx, client, roots) as (session, url):
            env = {**os.environ, "TBA_MCP_URL": url, "TBA_QUERY": query.query, "TBA_QUERY_ID": str(query.query_id),
                   "TBA_GROUP": query.group}
            end = run_agent(self.argv, env, self.timeout_s, session.done,
                            grace_s=lambda: GRACE_S if session.ended in (FINISH, CALL_CAP) else 0.0, stopping=stopping)
        how = None
        if end.start_error is not None:
            ctx.infra_failure = ctx.infra_failure or InfraFailure(
                OUTSIDE_AGENT, f"agent {self.label!r} could not be started: {end.start_error}")
        elif end.stopped == "timeout":
            how = "timeout"
        elif end.stopped is None and end.exit_status != 0:
            tail = end.stderr_tail.strip()[-STDERR_SHOWN:] or "(nothing on stderr)"
            ctx.infra_failure = ctx.infra_failure or InfraFailure(
                OUTSIDE_AGENT, f"agent {self.label!r} exited with status {end.exit_status}; stderr tail: {tail}")
        elif end.stopped is None and never_contacted(session):
            # not an agent's Unsolved answer: it never reached the tools (a wrong URL, an agent that ignores
            # TBA_MCP_URL); counted as a failure, the query redone on a rerun
            ctx.infra_failure = ctx.infra_failure or InfraFailure(
                OUTSIDE_AGENT, f"agent {self.label!r} exited 0 without one request to its MCP URL (no tools listed, "
                "no call): it must connect to $TBA_MCP_URL")
        outcome = session_outcome(session, how)
        outcome.update(agent_exit_status=end.exit_status, agent_stopped=end.stopped,
                       agent_wall_seconds=round(end.seconds, 4))
        if ctx.infra_failure is not None or end.exit_status not in (0, None) and end.stopped is None:
            outcome["agent_stderr_tail"] = end.stderr_tail[-2000:]
            outcome["agent_stdout_tail"] = end.stdout_tail[-2000:]  # many agents log to stdout
        ctx.agent = outcome
        return session.answer_file()


class ByHand:
    """tba serve-tools: each query's URL printed; the session ends at its Finish, or when the run stops (Ctrl-C)."""

    def __init__(self, out=sys.stderr, on_open: Callable[[Any, str], None] | None = None):
        self.out = out
        self.on_open = on_open  # tests: told each URL as it opens

    def run_query(self, setup: Any, toolset: Any, ctx: QueryContext, client: Any, roots: list,
                  stopping: Callable[[], bool] | None = None) -> dict:
        query = toolset.query
        with hosted_session(setup, toolset, ctx, client, roots) as (session, url):
            print(f"{query.group} {query.query_id}: {url}\n  query: {query.query}", file=self.out, flush=True)
            if self.on_open is not None:
                self.on_open(query, url)
            while not session.done.wait(0.2):
                if stopping is not None and stopping():
                    break
        ctx.agent = session_outcome(session)
        return session.answer_file()


class Stdio:
    """tba serve-tools --stdio: one query's session over this process's stdin/stdout, until the client closes it."""

    def run_query(self, setup: Any, toolset: Any, ctx: QueryContext, client: Any, roots: list,
                  stopping: Callable[[], bool] | None = None) -> dict:
        from .mcp_host import serve_stdio

        session = open_session(setup, toolset, ctx, client, roots)
        try:
            serve_stdio(session)
        finally:
            session.close()
        ctx.agent = session_outcome(session)
        return session.answer_file()


def make_outside(cfg: Any) -> CommandAgent | None:
    """The driver a run's settings name: --agent CMD, else none (a model run)."""
    return CommandAgent(cfg.agent, cfg.agent_timeout) if cfg.agent else None
