"""One query's world for an outside agent: the functions the function-call run sends (Finish last), each call
answered by the run's own environment step (toolbench_adapter/env: the tool server's reply, the same status codes
and pure-JSON observations, Finish parsed as upstream parses it), grown into the chain a CoT@1 run writes and
recorded as a run's step records; closed into the upstream answer file (search/cot.py's shape).

Thread-safe: an MCP server may answer several requests of one agent at once; calls are taken one at a time, in
the order they arrive, so the chain and the records have one order."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from toolbench_adapter.env import ToolEnv
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.outcomes import TOOL_SERVER  # the tool server failed: the query is an infrastructure failure
from toolbench_adapter.parsers.base import Call, ParsedTurn
from toolbench_adapter.protocol import env as E
from toolbench_adapter.protocol.react import TOOL_CALL_ID_PREFIX
from toolbench_adapter.structured.checks import step_violations

from ..failures import tool_failure
from ..search.agent import QueryContext, client_fields
from ..search.cot import CoTResult, cot_file
from ..search.tree import ACTION, ACTION_INPUT, Node, mark_finished

PARSER = "mcp"  # a step record's parser: the call came as an MCP tools/call request, nothing was parsed

# why a session takes no more calls (its ``ended``), in the words queries.jsonl's agent_outcome uses
FINISH = "finish"  # the agent called Finish with give_answer or give_up_and_restart
CALL_CAP = "call_cap"  # a call past max_step calls
CLOSED = "closed"  # the session was closed (the agent exited, timed out, or the run stopped)

REFUSALS = {
    FINISH: "this query's session has ended: Finish was called",
    CALL_CAP: "call refused: this query's budget of {cap} tool calls is spent (max_step); the session has ended",
    TOOL_SERVER: "this query's session has ended: the tool server failed",
    CLOSED: "this query's session has ended",
}


@dataclass(frozen=True)
class Reply:
    """What the agent gets back for one call: the observation a run's model would see, its status code (None:
    refused before the environment) and whether MCP should flag it as an error."""

    text: str
    status: int | None
    is_error: bool
    refused: str | None = None


class QuerySession:
    def __init__(self, toolset: Any, ctx: QueryContext, client: Any, compat: Any, *, max_calls: int,
                 max_observation_length: int = E.MAX_OBSERVATION_LENGTH):
        self.toolset = toolset
        self.ctx = ctx
        self.max_calls = max_calls
        self.env = ToolEnv(toolset, client, compat, max_observation_length=max_observation_length)
        self.root = Node.root(initial_messages(toolset), self.env)
        self.last = self.root
        self.ended: str | None = None
        self.refused = 0  # calls refused after the session ended (each also a step record)
        self.listed = 0  # tools/list requests answered
        self.protocol_errors: list[dict] = []  # malformed MCP requests on this session's URL (mcp_host.py)
        self.done = threading.Event()  # set when the session ends: the driver stops waiting for the agent
        self._lock = threading.Lock()
        self._started = time.monotonic()

    # -- what the agent sees ------------------------------------------------------------------------------------
    def tools(self) -> list[dict]:
        """The function-call run's functions as sent (names, descriptions, parameters), Finish last."""
        self.listed += 1
        return self.toolset.inner_functions

    def call(self, name: str, arguments: Any) -> Reply:
        """One tools/call: stepped as a run steps a native call, or refused once the session has ended."""
        with self._lock:
            if self.ended is None and self.ctx.budget.query_count >= self.max_calls:
                self._end(CALL_CAP)
            if self.ended is not None:
                return self._refuse(name, arguments)
            return self._step(name, arguments)

    def note_protocol_error(self, detail: dict) -> None:
        with self._lock:
            self.protocol_errors.append(detail)

    def close(self, why: str = CLOSED) -> None:
        with self._lock:
            if self.ended is None:
                self._end(why)

    # -- the answer ---------------------------------------------------------------------------------------------
    @property
    def final_answer(self) -> str | None:
        return self.env.final_answer

    def answer_file(self) -> dict:
        """The CoT@1 answer file of the chain so far (answered: the Finish give_answer node is its terminal)."""
        terminal = self.last if self.last.is_terminal and not self.last.pruned else None
        if terminal is not None:
            mark_finished(terminal)
        result = CoTResult(roots=[self.root], last_nodes=[self.last], terminal=terminal)
        return cot_file(result, self.ctx, self.max_calls, 1)

    # -- inside the lock ----------------------------------------------------------------------------------------
    def _end(self, why: str) -> None:
        self.ended = why
        self.done.set()

    def _refuse(self, name: str, arguments: Any) -> Reply:
        self.refused += 1
        text = json.dumps({"error": REFUSALS[self.ended].format(cap=self.max_calls), "response": ""})
        self._record(None, name, _raw(arguments), None, None, refused=self.ended)
        return Reply(text, None, True, refused=self.ended)

    def _step(self, name: str, arguments: Any) -> Reply:
        ctx = self.ctx
        ctx.budget.query_count += 1  # one agent call = one turn of the chain (the agent's own model calls are unseen)
        raw = _raw(arguments)
        call_id = f"{TOOL_CALL_ID_PREFIX}{ctx.budget.query_count}"
        parsed = ParsedTurn(parser=PARSER, calls=[Call(name, raw, arguments if isinstance(arguments, dict) else None,
                                                        call_id)])
        violations = step_violations(parsed, self.toolset, ctx.schemas)[0]
        tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}
        history = list(self.last.messages) + [{"role": "assistant", "content": "", "tool_calls": [tool_call]}]
        action = self.last.add_child(ACTION, name, history)
        started = time.perf_counter()
        result = self.env.step(name, raw)
        ctx.budget.env_seconds += time.perf_counter() - started
        shown = E.INVALID_FUNCTION_NAME if result.status == E.STATUS_NO_SUCH_FUNCTION else name
        if shown != name:
            tool_call["function"]["name"] = shown
        history = history + [{"role": "tool", "name": shown, "content": result.observation, "tool_call_id": call_id}]
        node = action.add_child(ACTION_INPUT, raw, history)
        node.observation, node.observation_code = result.observation, result.status
        node.pruned = result.status == E.STATUS_GIVE_UP
        node.is_terminal = result.status == E.STATUS_FINAL_ANSWER
        failure = tool_failure(result)
        if failure is not None:  # the tool server failed, not the agent: the query stops here, as a run's does
            node.pruned = True
            ctx.infra_failure = ctx.infra_failure or failure
        self.last = node
        self._record(node, name, raw, result, violations, infra=failure.kind if failure else None)
        if failure is not None:
            self._end(TOOL_SERVER)
        elif node.is_terminal or node.pruned:
            self._end(FINISH)
        is_error = result.status in (E.STATUS_NO_SUCH_FUNCTION, E.STATUS_INPUT_ERROR) or failure is not None
        return Reply(result.observation, result.status, is_error)

    def _record(self, node: Node | None, name: str, raw: str, result: Any, violations: list | None, *,
                infra: str | None = None, refused: str | None = None) -> None:
        """A run's step record (search/agent.py's fields) for one call; a refused call's has no status."""
        ctx = self.ctx
        self.ctx.records.append({
            "group": ctx.group, "query_id": ctx.toolset.query.query_id, "method": ctx.method,
            "turn": ctx.budget.query_count, "step": node.depth if node is not None else None, "parser": PARSER,
            "error": None, "rung": None, "call": name, "arguments": raw,
            "status": result.status if result is not None else None,
            "suffix_match_differs": bool(result.suffix_match_differs) if result is not None else False,
            "source": result.source if result is not None else None,
            **client_fields(result),
            "infra_failure": infra, "violations": violations,
            "agent_seconds": round(time.monotonic() - self._started, 4),  # since the session opened
            **({"refused": refused} if refused else {}),
        })


def _raw(arguments: Any) -> str:
    """The arguments as the text a run's step gets (JSON of what the agent sent; none: {})."""
    try:
        return json.dumps({} if arguments is None else arguments, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(str(arguments), ensure_ascii=False)
