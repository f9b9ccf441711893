"""The grammar of one reply, derived per query from the dialect's format and the function list.

A constrained model can only write what the dialect's format allows, with a listed function name (Finish
included) and arguments that fit that function's schema (adapted by parsers/upstream_schema.py):

- toolllama (reference §3.5, protocol/react.py): ``Thought: <one line>\\nAction: NAME\\nAction Input: {json}``;
- json-object (dialects/chat.py): ``{"think": ..., "action": NAME, "arguments": {...}}`` or
  ``{"think": ..., "answer": ...}``;
- jsonl: one to MAX_CALLS lines ``{"name": NAME, "parameters": {...}, "call_id": ...}``;
- hermes: a thought, then one to MAX_CALLS ``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>`` blocks.

The grammar covers what the model generates: the dialect's prefill (e.g. "Thought: ") is already in the
prompt, so the grammar starts after it. It is written as xgrammar EBNF (the hf backend compiles it; vLLM's
``structured_outputs.grammar`` reads the same text, its xgrammar backend being the same library) and, where
the whole reply is one JSON object, also as a JSON schema (OpenAI's ``response_format``).

Choices of the grammar that the schemas alone do not make (none changes what the validator accepts):
- JSON is written compactly (``{"a": 1, "b": 2}``): free whitespace lets small models loop on spaces;
- a parameter the schema does not declare cannot be written (the validator allows it: upstream never closes
  its objects);
- the thought is one line; Finish with give_answer must carry a non-empty final_answer (upstream's environment
  answers a give_answer without one with status 2, "must have final_answer");
- a function whose schema the grammar compiler refuses (xgrammar: a pattern it cannot parse, minLength above
  maxLength, ...) gets unconstrained arguments (any JSON object), and the reason goes into the Constraint
  (``unconstrained``; the step record keeps it): the query runs, its calls still validated;
- the free text of a reply (thought, final answer) is bounded in characters so that the whole reply fits the
  turn's token budget even at one character per token (text_budget): a small model repeating itself still
  closes its JSON before max_tokens cuts it (a cut reply is a truncated, invalid turn).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from toolbench_adapter.queryset.toolset import Toolset

from ..errors import InputError
from ..parsers.upstream_schema import argument_schemas, function_entries
from ..protocol.functions import FINISH_NAME, GIVE_ANSWER, GIVE_UP
from ..protocol.parsers import HERMES_CLOSE, HERMES_OPEN
from ..protocol.react import ACTION_END, ACTION_INPUT_END, THOUGHT_MARKER

THOUGHT_MAX_CHARS = 300
CALL_ID_MAX_CHARS = 16
MAX_CALLS = 3  # jsonl lines / hermes blocks per reply
# Free text is bounded so that the reply fits the turn's token budget: a token holds at least one character
# (a small model's repetitive answers, digits and symbols, run near one), so thought + answer + the call's own
# tokens (markers, keys, the function name: CALL_OVERHEAD_TOKENS) stay under max_tokens. Measured: with the
# answer alone at 2 characters per token the JSON was still cut on 2 of 6 sample queries (SmolLM2-135M,
# json-object, 256 tokens), at 1 (thought unbounded by the budget) on 1 of 6.
CALL_OVERHEAD_TOKENS = 48
MIN_TEXT_CHARS = 16
DIALECTS = ("toolllama", "json-object", "jsonl", "hermes")
INSTALL_FIX = "pip install -e '.[structured]' (xgrammar), or run with --constrain off"


@dataclass(frozen=True)
class Constraint:
    """What a backend needs to constrain one request: the EBNF of the reply and, for replies that are one
    JSON object, its JSON schema. ``name``: the format (a dialect name, or "judge")."""

    name: str
    ebnf: str | None = None
    json_schema: dict | None = None
    unconstrained: tuple[tuple[str, str], ...] = ()  # (function, why its arguments are not constrained)


def xgrammar():
    try:
        import xgrammar as xgr
    except ImportError:
        raise InputError("constrained decoding needs the xgrammar library, which is not installed",
                         field="constrain", fix=INSTALL_FIX) from None
    return xgr


@dataclass(frozen=True)
class TextBudget:
    """Characters the free text of one reply may take: ``answer`` None means unbounded (no max_tokens)."""

    thought: int
    answer: int | None


def text_budget(max_tokens: int | None) -> TextBudget:
    """A quarter of the turn for the thought (at most THOUGHT_MAX_CHARS), the rest less the call's overhead for
    the final answer; with no token budget the thought keeps its cap and the answer has none."""
    if not max_tokens:
        return TextBudget(THOUGHT_MAX_CHARS, None)
    thought = max(MIN_TEXT_CHARS, min(THOUGHT_MAX_CHARS, max_tokens // 4))
    return TextBudget(thought, max(MIN_TEXT_CHARS, max_tokens - thought - CALL_OVERHEAD_TOKENS))


def answer_schema(max_tokens: int | None) -> dict:
    schema: dict = {"type": "string", "minLength": 1}
    limit = text_budget(max_tokens).answer
    if limit is not None:
        schema["maxLength"] = limit
    return schema


def finish_arguments_schema(max_tokens: int | None = None) -> dict:
    """Finish's arguments as the grammar allows them: give_answer with a final answer, or give_up_and_restart."""
    return {"anyOf": [
        {"type": "object", "properties": {"return_type": {"const": GIVE_ANSWER},
                                          "final_answer": answer_schema(max_tokens)},
         "required": ["return_type", "final_answer"]},
        {"type": "object", "properties": {"return_type": {"const": GIVE_UP}}, "required": ["return_type"]}]}


def grammar_schemas(toolset: Toolset, max_tokens: int | None = None,
                    unconstrained: dict[str, str] | None = None) -> dict[str, dict]:
    """Function name -> the schema its arguments are generated under (Finish: finish_arguments_schema). A schema
    the grammar compiler refuses becomes ANY_OBJECT, its reason put in ``unconstrained`` (when given)."""
    try:
        schemas = argument_schemas(toolset.functions)
    except RecursionError:  # a schema too deep to convert: every function unconstrained, said once
        schemas = {name: ANY_OBJECT for name in _names(toolset)}
        if unconstrained is not None:
            unconstrained.update({name: "a schema is nested too deeply to convert" for name in schemas})
        return schemas
    if FINISH_NAME in schemas and set(schemas[FINISH_NAME].get("properties") or {}) == {"return_type", "final_answer"}:
        schemas[FINISH_NAME] = finish_arguments_schema(max_tokens)
    for name, schema in schemas.items():
        problem = grammar_problem(schema_text(schema))
        if problem is not None:
            schemas[name] = ANY_OBJECT
            if unconstrained is not None:
                unconstrained[name] = problem
    return schemas


ANY_OBJECT = {"type": "object"}


def _names(toolset: Toolset) -> list[str]:
    return list(dict.fromkeys(f["name"] for f in function_entries(toolset.functions)))


@lru_cache(maxsize=4096)
def grammar_problem(schema_json: str) -> str | None:
    """Why xgrammar cannot take this argument schema (its message without the C++ source position), or None."""
    try:
        _json(xgrammar(), json.loads(schema_json))
    except (RuntimeError, ValueError, TypeError, RecursionError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return "the grammar compiler refuses the schema: " + re.sub(r"^\[[^\]]*\]\s*\S+:\d+:\s*", "", message)
    return None


def _literal(xgr, text: str):
    return xgr.Grammar.from_ebnf("root ::= " + json.dumps(text))


def _json(xgr, schema: dict):
    return xgr.Grammar.from_json_schema(schema, any_whitespace=False, strict_mode=True)


def _repeat(xgr, item, separator: str, most: int):
    """item (separator item){0, most-1}, without recursion: item (sep item (sep item)?)?"""
    empty = xgr.Grammar.from_ebnf('root ::= ""')
    tail = empty
    for _ in range(most - 1):
        tail = xgr.Grammar.union(empty, xgr.Grammar.concat(_literal(xgr, separator), item, tail))
    return xgr.Grammar.concat(item, tail)


def reply_start(prefill: str, opening: str) -> str:
    """What the grammar must still write of ``opening`` after the prefill (InputError when they disagree)."""
    if opening.startswith(prefill):
        return opening[len(prefill):]
    if prefill.startswith(opening) and "\n" not in prefill[len(opening):]:
        return ""  # the prefill already began the thought
    raise InputError(f"the dialect's prefill {prefill!r} does not start the format's {opening!r}, so no grammar "
                     "can follow it", field="dialect_options", fix="use --dialect-option prefill='Thought: ' "
                     "(or none) with --constrain schema")


def _object_schema(properties: dict, required: list[str]) -> dict:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def json_object_schema(toolset: Toolset, max_tokens: int | None = None,
                       unconstrained: dict[str, str] | None = None) -> dict:
    """The json-object dialect's reply: one call of a listed function, or the final answer."""
    think = {"type": "string", "maxLength": text_budget(max_tokens).thought}
    branches = [_object_schema({"think": think, "action": {"const": name}, "arguments": schema},
                               ["think", "action", "arguments"])
                for name, schema in grammar_schemas(toolset, max_tokens, unconstrained).items()]
    branches.append(_object_schema({"think": think, "answer": answer_schema(max_tokens)}, ["think", "answer"]))
    return {"anyOf": branches}


def _call_object_schema(toolset: Toolset, arguments_key: str, with_id: bool, max_tokens: int | None,
                        unconstrained: dict[str, str]) -> dict:
    branches = []
    for name, schema in grammar_schemas(toolset, max_tokens, unconstrained).items():
        properties = {"name": {"const": name}, arguments_key: schema}
        if with_id:
            properties["call_id"] = {"type": "string", "pattern": f"^[A-Za-z0-9_-]{{1,{CALL_ID_MAX_CHARS}}}$"}
        branches.append(_object_schema(properties, ["name", arguments_key]))
    return {"anyOf": branches}


def reply_constraint(dialect: str, toolset: Toolset, prefill: str = "", max_tokens: int | None = None) -> Constraint:
    """The Constraint of one reply in ``dialect`` for this query's functions (``max_tokens``: the turn's budget)."""
    if dialect not in DIALECTS:
        raise InputError(f"--constrain schema has no grammar for the {dialect} dialect", field="dialect",
                         fix=f"use one of {', '.join(DIALECTS)}, or --constrain off")
    xgr = xgrammar()
    unconstrained: dict[str, str] = {}
    constraint = _reply_constraint(xgr, dialect, toolset, prefill, max_tokens, unconstrained)
    return Constraint(constraint.name, constraint.ebnf, constraint.json_schema, tuple(unconstrained.items()))


def _reply_constraint(xgr, dialect: str, toolset: Toolset, prefill: str, max_tokens: int | None,
                      unconstrained: dict[str, str]) -> Constraint:
    thought = f"[^\\n]{{1,{text_budget(max_tokens).thought}}}"
    if dialect == "toolllama":
        calls = [xgr.Grammar.concat(_literal(xgr, ACTION_END + name + ACTION_INPUT_END), _json(xgr, schema))
                 for name, schema in grammar_schemas(toolset, max_tokens, unconstrained).items()]
        start = reply_start(prefill, THOUGHT_MARKER)
        parts = ([_literal(xgr, start)] if start else []) + [xgr.Grammar.from_regex(thought), xgr.Grammar.union(*calls)]
        return Constraint(dialect, ebnf=str(xgr.Grammar.concat(*parts)))
    if prefill:
        raise InputError(f"the {dialect} dialect with a prefill ({prefill!r}) cannot be constrained",
                         field="dialect_options", fix="leave the prefill out with --constrain schema")
    if dialect == "json-object":
        schema = json_object_schema(toolset, max_tokens, unconstrained)
        return Constraint(dialect, ebnf=str(_json(xgr, schema)), json_schema=schema)
    if dialect == "jsonl":
        line = _json(xgr, _call_object_schema(toolset, "parameters", with_id=True, max_tokens=max_tokens,
                                              unconstrained=unconstrained))
        return Constraint(dialect, ebnf=str(_repeat(xgr, line, "\n", MAX_CALLS)))
    block = xgr.Grammar.concat(_literal(xgr, HERMES_OPEN + "\n"),
                               _json(xgr, _call_object_schema(toolset, "arguments", with_id=False,
                                                              max_tokens=max_tokens, unconstrained=unconstrained)),
                               _literal(xgr, "\n" + HERMES_CLOSE))
    head = xgr.Grammar.from_regex(f"[^<]{{0,{text_budget(max_tokens).thought}}}")
    return Constraint(dialect, ebnf=str(xgr.Grammar.concat(head, _repeat(xgr, block, "\n", MAX_CALLS))))


def judge_schema(field: str, choices: list[str], reason_field: str) -> dict:
    """The evaluator's verdict: the label first (one of ``choices``), then an optional short reason."""
    return _object_schema({field: {"type": "string", "enum": list(choices)},
                           reason_field: {"type": "string", "maxLength": 300}}, [field])


def judge_constraint(field: str, choices: list[str], reason_field: str) -> Constraint:
    return Constraint("judge", json_schema=judge_schema(field, choices, reason_field))


def schema_text(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, ensure_ascii=False)
