"""Structured-format parsers (json-object, fenced-json, jsonl, hermes, openai-tools), schema checks, registry."""

from __future__ import annotations

import json

import pytest

from toolbench_adapter.parsers import PARSERS, Call, ErrorKind, Rung, get_parser
from toolbench_adapter.parsers.jsonl import JsonlStreamParser
from toolbench_adapter.parsers.schema import validate_call, validate_turn
from toolbench_adapter.protocol.functions import finish_function
from toolbench_adapter.registry import UnknownNameError


def calls(turn):
    return [(c.name, c.arguments) for c in turn.calls]


# ---- registry

def test_every_variant_is_registered_and_named_consistently():
    expected = {"react-find", "react-regex", "react-robust", "json-object", "fenced-json", "jsonl", "hermes",
                "openai-tools"}
    assert expected <= set(PARSERS.names())
    for name in expected:
        assert get_parser(name).name == name


def test_unknown_parser_suggests_a_close_name():
    with pytest.raises(UnknownNameError, match="react-robust"):
        get_parser("react-robst")


# ---- json-object

def test_json_object_call_answer_and_surrounding_text():
    parser = get_parser("json-object")
    turn = parser.parse('{"think": "need data", "action": "get_x", "arguments": {"a": 1}}')
    assert calls(turn) == [("get_x", {"a": 1})] and turn.thought == "need data" and turn.error is ErrorKind.NONE
    answer = parser.parse('Here you go: {"think": "done", "answer": "42"} bye')
    assert answer.final_answer == "42" and answer.calls[0].name == "Finish"
    assert answer.calls[0].arguments == {"return_type": "give_answer", "final_answer": "42"}
    assert answer.error is ErrorKind.TRAILING_TEXT and answer.rung is Rung.BRACE_MATCH


def test_json_object_missing_fields():
    parser = get_parser("json-object")
    assert parser.parse('{"think": "hmm"}').error is ErrorKind.MISSING_FIELD
    no_args = parser.parse('{"think": "t", "action": "get_x"}')
    assert no_args.error is ErrorKind.MISSING_FIELD and no_args.calls[0].arguments is None


def test_json_object_falls_back_to_legacy_tags():
    parser = get_parser("json-object")
    search = parser.parse("<think>look it up</think>\n<search>weather Paris</search>")
    assert calls(search) == [("search", {"query": "weather Paris"})] and search.thought == "look it up"
    tools = parser.parse('<tools_call>{"name": "get_x", "arguments": {"a": 1}}</tools_call>')
    assert calls(tools) == [("get_x", {"a": 1})]
    answer = parser.parse("<think>ok</think><answer>It is 42.</answer>")
    assert answer.final_answer == "It is 42." and answer.calls[0].name == "Finish"


# ---- fenced-json

def test_fenced_json_direct_fenced_and_span():
    parser = get_parser("fenced-json")
    assert calls(parser.parse('{"name": "a", "arguments": {"x": 1}}')) == [("a", {"x": 1})]
    fenced = parser.parse('I will call it.\n```json\n{"action": "a", "parameters": {"x": 1}}\n```')
    assert calls(fenced) == [("a", {"x": 1})] and fenced.thought == "I will call it." and fenced.error is ErrorKind.NONE
    span = parser.parse('call: {"name": "a", "arguments": {"x": {"y": 2}}} thanks')
    assert calls(span) == [("a", {"x": {"y": 2}})] and span.error is ErrorKind.TRAILING_TEXT
    several = parser.parse('[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]')
    assert [c.name for c in several.calls] == ["a", "b"]
    assert parser.parse("just prose").error is ErrorKind.NO_ACTION


# ---- jsonl

JSONL = '{"name": "a", "parameters": {"x": 1}, "call_id": "c1"}\nnot json\n{"name": "b", "parameters": {}}\n'


def test_jsonl_bad_lines_are_reported_and_good_lines_survive():
    turn = get_parser("jsonl").parse(JSONL)
    assert calls(turn) == [("a", {"x": 1}), ("b", {})]
    assert turn.calls[0].call_id == "c1"
    assert turn.error is ErrorKind.BAD_LINE and turn.details == ["line 2: not JSON: 'not json'"]


def test_jsonl_error_field_and_missing_parameters():
    turn = get_parser("jsonl").parse('{"error": "tool unavailable"}\n{"name": "a"}')
    assert turn.calls == [] and turn.error is ErrorKind.ERROR_FIELD
    assert len(turn.details) == 2 and turn.details[1].startswith("line 2: no parameters / arguments field")


def test_jsonl_stream_yields_calls_when_their_line_completes():
    stream = JsonlStreamParser()
    assert stream.feed('{"name": "a", "param') == []
    assert [c.name for c in stream.feed('eters": {}}\n{"name": "b", ')] == ["a"]
    assert stream.feed('"parameters": {"y": 2}}') == []
    turn = stream.close()
    assert calls(turn) == [("a", {}), ("b", {"y": 2})]
    assert turn.to_json() == get_parser("jsonl").parse('{"name": "a", "parameters": {}}\n{"name": "b", "parameters": {"y": 2}}').to_json()


# ---- hermes

def test_hermes_blocks_thought_and_end_tag_inside_a_string():
    text = ('Let me check.\n<tool_call>\n{"name": "a", "arguments": {"html": "</tool_call>"}}\n</tool_call>\n'
            '<tool_call>{"name": "b", "arguments": "{\\"x\\": 1}"}</tool_call>')
    turn = get_parser("hermes").parse(text)
    assert turn.thought == "Let me check."
    assert calls(turn) == [("a", {"html": "</tool_call>"}), ("b", {"x": 1})]
    assert turn.error is ErrorKind.NONE


def test_hermes_unclosed_last_block():
    turn = get_parser("hermes").parse('<tool_call>{"name": "a", "arguments": {"q": "Par')
    assert calls(turn) == [("a", {"q": "Par"})] and turn.error is ErrorKind.TRUNCATED_JSON and turn.rung is Rung.REPAIR
    eaten_stop = get_parser("hermes").parse('<tool_call>{"name": "a", "arguments": {}}')
    assert calls(eaten_stop) == [("a", {})] and eaten_stop.error is ErrorKind.NONE
    assert get_parser("hermes").parse("The answer is 4.").error is ErrorKind.NO_ACTION


# ---- openai-tools

def test_openai_tools_message_and_text_forms():
    parser = get_parser("openai-tools")
    message = {"role": "assistant", "content": "thinking", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": '{"x": 1}'}},
        {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{'y': 2}"}}]}
    turn = parser.parse_message(message)
    assert calls(turn) == [("a", {"x": 1}), ("b", {"y": 2})] and turn.thought == "thinking"
    assert [c.call_id for c in turn.calls] == ["call_1", "call_2"]
    assert turn.error is ErrorKind.PYTHON_LITERAL  # the second call needed the python-literal rung
    assert parser.parse(json.dumps(message)).to_json() == turn.to_json()
    legacy = parser.parse_message({"role": "assistant", "content": None,
                                   "function_call": {"name": "Finish", "arguments": '{"return_type": "give_answer", "final_answer": "x"}'}})
    assert legacy.final_answer == "x"
    assert parser.parse("Thought: plain text").error is ErrorKind.NOT_APPLICABLE
    assert parser.parse_message({"role": "assistant", "content": "hi"}).error is ErrorKind.NO_ACTION


def test_openai_tools_empty_arguments_string():
    turn = get_parser("openai-tools").parse_message(
        {"role": "assistant", "tool_calls": [{"id": "1", "function": {"name": "a", "arguments": ""}}]})
    assert turn.error is ErrorKind.NO_ACTION_INPUT and turn.calls[0].arguments is None


# ---- schema validation

FUNCTIONS = [
    {"name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"},
        "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["", "city"]}},
    finish_function(),
]


@pytest.mark.parametrize(("call", "problems"), [
    (Call("get_weather", "", {"city": "Paris", "days": 3, "unit": "c"}), []),
    (Call("get_weather", "", {"days": 3}), ["arguments: missing required parameter 'city'"]),
    (Call("get_weather", "", {"city": "Paris", "days": "3"}), ["arguments: parameter 'days' should be integer, got str"]),
    (Call("get_weather", "", {"city": "Paris", "days": True}), ["arguments: parameter 'days' should be integer, got bool"]),
    (Call("get_weather", "", {"city": "Paris", "unit": "k"}), ["arguments: parameter 'unit' = 'k' is not one of ['c', 'f']"]),
    (Call("get_wether", "", {}), ["no function named 'get_wether'"]),
    (Call("get_weather", "{oops", None), ["arguments are not a JSON object"]),
    (Call("Finish", "", {"return_type": "give_up"}), ["arguments: parameter 'return_type' = 'give_up' is not one of ['give_answer', 'give_up_and_restart']"]),
])
def test_validate_call(call, problems):
    assert validate_call(call, FUNCTIONS) == problems


def test_validate_call_accepts_openai_tools_and_action_enum():
    tools = [{"type": "function", "function": FUNCTIONS[0]}]
    assert validate_call(Call("get_weather", "", {"city": "x"}), tools) == []
    assert validate_call(Call("get_weather", "", {"city": "x"}), tools, action_enum=["Finish"]) == [
        "function 'get_weather' is not one of the allowed actions"]


def test_validate_turn_marks_schema_violation_only_on_clean_turns():
    turn = get_parser("react-robust").parse('Thought: t\nAction: get_weather\nAction Input: {"days": 2}')
    validate_turn(turn, FUNCTIONS)
    assert turn.error is ErrorKind.SCHEMA_VIOLATION and "missing required parameter 'city'" in turn.details[-1]
    truncated = get_parser("react-robust").parse('Thought: t\nAction: get_weather\nAction Input: {"days": 2')
    validate_turn(truncated, FUNCTIONS)
    assert truncated.error is ErrorKind.TRUNCATED_JSON  # the first problem met stays the turn's kind
