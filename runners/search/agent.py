"""One model turn on a tree node: render, generate, parse, step the environment, grow child nodes.
Shared by CoT and DFSDT so the two methods differ only in how they walk the tree."""

from __future__ import annotations

import random
import string
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from toolbench_adapter.dialects.base import Dialect
from toolbench_adapter.parsers import PARSERS
from toolbench_adapter.parsers.base import ParsedTurn
from toolbench_adapter.parsers.schema import LazySchemas
from toolbench_adapter.protocol import env as E
from toolbench_adapter.protocol.react import TOOL_CALL_ID_LENGTH, TOOL_CALL_ID_PREFIX
from toolbench_adapter.queryset.toolset import Toolset
from toolbench_adapter.runs.call_record import CallRecorder
from toolbench_adapter.structured.checks import step_violations

from ..failures import CONTEXT_LENGTH, InfraFailure, model_failure, tool_failure
from ..models.base import Completion, ModelRequest
from .tree import ACTION, ACTION_INPUT, THOUGHT, Node

ID_ALPHABET = string.ascii_letters + string.digits


def reads_native_calls(parser_name: str) -> bool:
    return hasattr(PARSERS.get(parser_name)(), "parse_message")


def make_parse(parser_name: str) -> Callable[[Completion], Any]:
    parser = PARSERS.get(parser_name)()
    if hasattr(parser, "parse_message"):  # native tool calls: parse the message, not its text
        return lambda completion: parser.parse_message(completion.message())
    return lambda completion: parser.parse(completion.text or "")


@dataclass
class Budget:
    """Per-query counters of one search (upstream: query_count, total_tokens, DFS expand counter)."""

    query_count: int = 0
    total_tokens: int = 0
    expand_counter: int = 0
    model_seconds: float = 0.0
    env_seconds: float = 0.0
    # the search's model-call cap (DFSDT's max_query_count; None: CoT has none): re-asks stop at it too
    call_cap: int | None = None
    prompt_tokens: int = 0  # what each call's usage said (issue 42: cost per query, latency percentiles)
    completion_tokens: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds per model call, in order


@dataclass
class QueryContext:
    toolset: Toolset
    group: str
    method: str
    seed: int = 42
    budget: Budget = field(default_factory=Budget)
    records: list[dict] = field(default_factory=list)  # per-step records for steps.jsonl
    # set at the first infrastructure failure: the search stops there and the query writes no answer file
    infra_failure: InfraFailure | None = None
    # model requests the endpoint refused as longer than the model's context: the model's limit, so the chain
    # ends there (upstream: an LLM error prunes the Thought) and the query still finishes
    context_length: int = 0
    # each model call's request and raw reply, into the first step record of that call (runs/call_record.py)
    calls: CallRecorder = field(default_factory=CallRecorder)
    # an outside agent's outcome (runners/outside/drive.py): the fields its queries.jsonl line adds; None: a model
    agent: dict | None = None

    _rng: random.Random | None = field(default=None, init=False, repr=False)
    _schemas: LazySchemas | None = field(default=None, init=False, repr=False)

    @property
    def schemas(self) -> LazySchemas:
        """The function list's argument schemas, each converted and compiled once for the whole query."""
        if self._schemas is None:
            self._schemas = LazySchemas(self.toolset.functions)
        return self._schemas

    @property
    def rng(self) -> random.Random:
        """Call ids and fallbacks, deterministic per (seed, query): reruns write identical files. Seeded on first
        use: most queries draw nothing (native calls bring their ids), and seeding costs a hash and a urandom read."""
        if self._rng is None:
            self._rng = random.Random(f"{self.seed}:{self.group}:{self.toolset.query.query_id}")
        return self._rng


@dataclass
class Agent:
    backend: Any  # runners.models.base.Backend
    dialect: Dialect
    parse: Callable[[Completion], ParsedTurn]
    max_tokens: int = 1024
    temperature: float = 0.0
    on_call: Callable[[], None] | None = None  # progress hook, called once per model call
    # --constrain / --on-invalid (search/structured.py): constrained requests and re-asks; None: as upstream
    structured: Any = None
    # a trial's run (tba run --trials) sends its seed with every request; an ordinary run sends none
    send_seed: bool = False

    def request_for(self, node: Node, ctx: QueryContext, messages: list[dict]) -> ModelRequest:
        rendered = self.dialect.render(messages, ctx.toolset)
        return ModelRequest(
            prompt=rendered.prompt, messages=rendered.messages, tools=rendered.tools, stop=rendered.stop,
            max_tokens=self.max_tokens, temperature=self.temperature,
            seed=ctx.seed if self.send_seed else None,
            extra={"prefill": rendered.prefill,
                   **(self.structured.request_extra(ctx.toolset, rendered) if self.structured else {})},
            key={"group": ctx.group, "query_id": ctx.toolset.query.query_id, "method": ctx.method,
                 "path": node.calls_so_far(), "attempt": len(node.children)})

    def expand(self, node: Node, ctx: QueryContext) -> Node:
        """One model call from ``node``; returns the last node it created (a Thought when the turn made no call)."""
        return self.grow(node, ctx, self.generate(node, ctx))

    def generate(self, node: Node, ctx: QueryContext) -> Completion:
        completion = self.ask(self.request_for(node, ctx, node.messages), ctx)
        if self.structured is not None:  # an invalid reply may be asked again (--on-invalid reask:N)
            completion = self.structured.settle(self, node, ctx, completion)
        return completion

    def ask(self, request: ModelRequest, ctx: QueryContext) -> Completion:
        """One model call, counted in the query's budget and recorded for its step record."""
        completion = self.backend.complete(request)
        ctx.calls.sent(request, completion)
        ctx.budget.query_count += 1
        ctx.budget.total_tokens += completion.total_tokens
        ctx.budget.prompt_tokens += completion.prompt_tokens
        ctx.budget.completion_tokens += completion.completion_tokens
        ctx.budget.model_seconds += completion.latency_s
        ctx.budget.latencies.append(round(completion.latency_s, 4))
        if self.on_call:
            self.on_call()
        return completion

    def grow(self, node: Node, ctx: QueryContext, completion: Completion) -> Node:
        """Child nodes for one completion: Thought (if any text), then Action + Action Input per call."""
        messages = node.messages
        turn = ctx.budget.query_count
        if completion.error:  # upstream: an LLM error prunes the Thought node
            thought = node.add_child(THOUGHT, completion.text or completion.error, messages)
            thought.pruned = True
            failure = model_failure(completion)
            ctx.infra_failure = ctx.infra_failure or failure
            too_long = completion.error_kind == CONTEXT_LENGTH
            ctx.context_length += too_long
            self._record(ctx, turn, thought, None, None, None, error=CONTEXT_LENGTH if too_long else "model_error",
                         detail=completion.error, completion=completion, infra=failure)
            return thought
        parsed = self.parse(completion)
        violations = step_violations(parsed, ctx.toolset, ctx.schemas)  # per call (one list for a turn with no call)
        content = self.dialect.assistant_content(completion.text, parsed)
        last = node
        if completion.text is not None:
            last = node.add_child(THOUGHT, completion.text, messages)
        if not parsed.calls:
            last = last if last is not node else node.add_child(THOUGHT, "", messages)
            last.messages = list(messages) + [{"role": "assistant", "content": content}]
            self._record(ctx, turn, last, parsed, None, None, completion=completion, violations=violations[0])
            return last
        tool_calls = [{"id": call.call_id or self._call_id(ctx), "type": "function",
                       "function": {"name": call.name, "arguments": call.arguments_raw}} for call in parsed.calls]
        assistant = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        history = list(messages) + [assistant]
        env = node.env.copy()  # this branch's state; siblings keep their own
        last.env = env
        for call, tool_call, call_violations in zip(parsed.calls, tool_calls, violations, strict=True):
            action = last.add_child(ACTION, call.name, history)
            started = time.perf_counter()
            result = env.step(call.name, call.arguments_raw)
            ctx.budget.env_seconds += time.perf_counter() - started
            name = call.name
            if result.status == E.STATUS_NO_SUCH_FUNCTION:
                name = E.INVALID_FUNCTION_NAME
                tool_call["function"]["name"] = name
            history = history + [{"role": "tool", "name": name, "content": result.observation,
                                  "tool_call_id": tool_call["id"]}]
            action_input = action.add_child(ACTION_INPUT, call.arguments_raw, history)
            action_input.observation = result.observation
            action_input.observation_code = result.status
            action_input.pruned = result.status == E.STATUS_GIVE_UP
            action_input.is_terminal = result.status == E.STATUS_FINAL_ANSWER
            failure = tool_failure(result)
            if failure is not None:  # the tool server failed, not the model: stop this query here
                action_input.pruned = True
                ctx.infra_failure = ctx.infra_failure or failure
            self._record(ctx, turn, action_input, parsed, call, result, infra=failure, completion=completion,
                         violations=call_violations)
            last = action_input
            if last.pruned or last.is_terminal:
                break  # calls after a Finish (or a failed call) in the same turn are not made
        return last

    def _call_id(self, ctx: QueryContext) -> str:
        return TOOL_CALL_ID_PREFIX + "".join(ctx.rng.choice(ID_ALPHABET) for _ in range(TOOL_CALL_ID_LENGTH))

    def _record(self, ctx: QueryContext, turn: int, node: Node, parsed: ParsedTurn | None, call: Any,
                result: Any, error: str | None = None, detail: str | None = None,
                infra: InfraFailure | None = None, completion: Completion | None = None,
                violations: list[dict] | None = None) -> None:
        ctx.records.append({
            "group": ctx.group, "query_id": ctx.toolset.query.query_id, "method": ctx.method, "turn": turn,
            "step": node.depth, "parser": parsed.parser if parsed else None,
            "error": error or (parsed.error.value if parsed else None),
            "rung": parsed.rung.value if parsed and parsed.rung else None,
            "call": call.name if call else None,
            "arguments": call.arguments_raw if call else None,
            "status": result.status if result else None,
            "suffix_match_differs": bool(result.suffix_match_differs) if result else False,
            "source": result.source if result else None,
            # what the tool-server client knew (None for Finish and unknown names: no HTTP call was made)
            **client_fields(result),
            **_model_fields(completion),
            **(ctx.calls.take() if completion is not None else {}),
            "infra_failure": infra.kind if infra else None,
            # the call checked against the query's function list (structured/checks.py); None: no parsed turn
            "violations": violations,
            **({"detail": detail} if detail else {}),
        })


def client_fields(result: Any) -> dict:
    server_call = result is not None and result.reply_kind is not None
    return {"reply_kind": result.reply_kind if server_call else None,
            "http_status": result.http_status if server_call else None,
            "attempts": result.attempts if server_call else None,
            "latency_s": round(result.latency_s, 4) if server_call else None,
            "faults": list(getattr(result, "faults", ())) if server_call else None}


def _model_fields(completion: Completion | None) -> dict:
    """The model call behind this step (every step of one turn repeats its call's figures: same ``turn``)."""
    if completion is None:
        return {}
    return {"prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens,
            "model_latency_s": round(completion.latency_s, 4), "finish_reason": completion.finish_reason}
