"""Structured output in a run: the refused trap, constrained requests and re-asks (none of it upstream).

``refuse_json_mode_with_tools`` runs for every run: native tools together with a JSON response mode make
models answer in JSON instead of calling a tool (they skip the call and make the answer up), so that pair is
exit 2 before anything runs. ``make_structured`` returns None for upstream's settings (--constrain off,
--on-invalid observe): the agent then runs exactly as before. Otherwise a StructuredOutput that

- checks the backend can constrain (``constraint_support``, after its preflight: auto-detected endpoints),
- adds the reply's Constraint (toolbench_adapter/structured/grammar.py) to every model request, and
- re-asks an invalid reply at most N times: the reply is discarded (a step record ``kind: "reask"`` keeps it,
  its attempt and violations), the model is asked again with the message of structured/reask.py after it, and
  after N the last reply goes on as observe would have it.
"""

from __future__ import annotations

import json
from typing import Any

from toolbench_adapter.dialects.base import Rendered
from toolbench_adapter.errors import InputError
from toolbench_adapter.parsers.schema import MODEL_KINDS
from toolbench_adapter.queryset.toolset import Toolset
from toolbench_adapter.structured.checks import as_violations, flat, step_violations
from toolbench_adapter.structured.grammar import reply_constraint
from toolbench_adapter.structured.policy import reask_limit
from toolbench_adapter.structured.rates import REASK
from toolbench_adapter.structured.reask import reask_message

TRAP = ("native tools together with a JSON response mode: the model then answers in JSON instead of calling a "
        "tool (it skips the tool call and makes the answer up), so no tool is ever called")


def refuse_json_mode_with_tools(cfg, backend, dialect) -> None:
    """Exit 2 (InputError) for a config that sends native tools with a JSON response mode."""
    _messages, tools = dialect.sends()
    if not tools:
        return
    mode = getattr(backend, "json_response_mode", None)
    if mode:
        raise InputError(f"{TRAP} (the {dialect.name} dialect sends native tools; backend option response_format "
                         f"asks for {mode})", field="response_format",
                         fix="drop --backend-option response_format, or use a text dialect (--dialect json-object) "
                         "for replies in JSON")
    if cfg.constrain != "off":
        raise InputError(f"{TRAP} (--constrain {cfg.constrain} constrains the reply to JSON, and the {dialect.name} "
                         "dialect sends native tools)", field="constrain",
                         fix="use --constrain off with native tools, or a text dialect (--dialect json-object, "
                         "jsonl or hermes) with --constrain schema")


def make_structured(cfg, backend, dialect) -> StructuredOutput | None:
    refuse_json_mode_with_tools(cfg, backend, dialect)
    limit = reask_limit(cfg.on_invalid)
    if cfg.constrain == "off" and limit == 0:
        return None
    return StructuredOutput(dialect, constrain=cfg.constrain == "schema", reasks=limit, max_tokens=cfg.max_tokens)


class StructuredOutput:
    def __init__(self, dialect, *, constrain: bool, reasks: int, max_tokens: int | None = None):
        self.dialect = dialect
        self.max_tokens = max_tokens
        self.constrain = constrain
        self.reasks = reasks

    def check_backend(self, backend) -> None:
        """Before any query (after the backend's preflight): a backend that cannot constrain is exit 2."""
        if not self.constrain:
            return
        name = getattr(backend, "name", "?")
        support = getattr(backend, "constraint_support", None)
        reason = support(self.dialect.name) if support is not None else (
            f"the {name} backend has no constrained decoding (hf, openai-chat and openai-completions have)")
        if reason:
            raise InputError(f"--constrain schema: {reason}", field="constrain",
                             fix="use a backend that can constrain (hf; vLLM behind openai-chat or "
                             "openai-completions), or --constrain off")

    def request_extra(self, toolset: Toolset, rendered: Rendered) -> dict:
        if not self.constrain:
            return {}
        return {"constraint": reply_constraint(self.dialect.name, toolset, rendered.prefill, self.max_tokens)}

    def settle(self, agent, node, ctx, completion) -> Any:
        """The completion to grow the tree with: after at most ``reasks`` re-asks of invalid replies."""
        for attempt in range(1, self.reasks + 1):
            if completion.error:
                return completion
            parsed = agent.parse(completion)
            found = flat(step_violations(parsed, ctx.toolset, ctx.schemas))
            if not any(v["kind"] in MODEL_KINDS for v in found):  # a schema not checkable is no reason to re-ask
                return completion
            cap = ctx.budget.call_cap
            if cap is not None and ctx.budget.query_count >= cap:  # DFSDT's cap: the search discards this reply
                return completion
            first = parsed.calls[0] if parsed.calls else None
            agent._record(ctx, ctx.budget.query_count, node, parsed, first, None, completion=completion,
                          violations=found)
            ctx.records[-1].update(kind=REASK, attempt=attempt)
            messages = list(node.messages) + [
                {"role": "assistant", "content": discarded_text(completion)},
                {"role": "user", "content": reask_message(as_violations(found), self.dialect.name, ctx.toolset)}]
            completion = agent.ask(agent.request_for(node, ctx, messages), ctx)
        return completion


def discarded_text(completion) -> str:
    """The discarded reply as the next request shows it: its text, or its native calls written out."""
    if completion.text:
        return completion.text
    return json.dumps([c.get("function") for c in completion.tool_calls or []], ensure_ascii=False)
