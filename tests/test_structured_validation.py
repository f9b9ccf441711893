"""Structured output, part 1: upstream schemas as JSON Schema, calls checked with jsonschema, violations in runs."""

import json

import pytest
from jsonschema import Draft7Validator

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.base import Completion
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.parsers.base import Call, ParsedTurn
from toolbench_adapter.parsers.schema import (
    ARGUMENTS_NOT_OBJECT,
    ARGUMENTS_REPAIRED,
    MISSING_REQUIRED,
    NO_CALL,
    NOT_IN_ENUM,
    UNKNOWN_FUNCTION,
    UNKNOWN_PARAMETER,
    WRONG_TYPE,
    call_violations,
    turn_violations,
)
from toolbench_adapter.parsers.upstream_schema import argument_schemas, to_json_schema
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.report.taxonomy import read_taxonomy, taxonomy_tables

# a current-flavour (STB HEAD) function: "" leads required and optional, example_value, a non-keyword "optional"
CURRENT = {"type": "function", "function": {
    "name": "get_weather_for_skycast", "description": "d",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "c", "example_value": "Lisbon"},
        "days": {"type": "integer", "description": "n", "example_value": 3},
        "unit": {"type": "string", "enum": ["c", "f"]}},
        "required": ["", "city"], "optional": ["", "days", "unit"]}}}
FINISH = {"type": "function", "function": {"name": "Finish", "parameters": {
    "type": "object", "properties": {"return_type": {"type": "string", "enum": ["give_answer", "give_up_and_restart"]},
                                     "final_answer": {"type": "string"}}, "required": ["return_type"]}}}
FUNCTIONS = [CURRENT, FINISH]


def kinds(violations):
    return [v.kind for v in violations]


# ---------------------------------------------------------------- the adapter

def test_empty_name_in_required_is_dropped_where_plain_jsonschema_would_demand_it():
    raw = CURRENT["function"]["parameters"]
    # without the adapter, jsonschema reads "" as a parameter every call must carry
    assert list(Draft7Validator(raw).iter_errors({"city": "Lisbon"}))
    schema = to_json_schema(raw)
    assert schema["required"] == ["city"] and "optional" not in schema
    assert "example_value" not in schema["properties"]["city"]
    assert not list(Draft7Validator(schema).iter_errors({"city": "Lisbon"}))


@pytest.mark.parametrize(("spelled", "json_type"), [
    ("STRING", "string"), ("NUMBER", "number"), ("BOOLEAN", "boolean"), ("ARRAY", "array"), ("OBJECT", "object"),
    ("string", "string"), ("integer", "integer"), ("ENUM", "string"), ("DATE (YYYY-MM-DD)", "string"),
    ("TIME (24-hour HH:MM)", "string"), ("BINARY", "string"), (None, "string")])
def test_upstream_type_spellings_become_json_schema_types(spelled, json_type):
    schema = to_json_schema({"type": "object", "properties": {"p": {"type": spelled}}, "required": [""]})
    assert schema["properties"]["p"]["type"] == json_type
    Draft7Validator.check_schema(schema)


def test_enum_that_contradicts_its_type_keeps_the_enum():
    schema = to_json_schema({"properties": {"n": {"type": "integer", "enum": ["1", "2"]}}})
    assert schema["properties"]["n"] == {"enum": ["1", "2"]} and schema["type"] == "object"


def test_not_a_schema_accepts_any_object():
    assert to_json_schema(None) == {"type": "object"} and to_json_schema("x") == {"type": "object"}


def test_every_function_of_the_upstream_test_set_adapts_to_a_valid_schema(stb_root):
    queries = QuerySet(stb_root)
    checked = 0
    for group in queries.available_groups():
        for query in queries.load(group):
            for flavour in ("legacy", "current"):
                for name, schema in argument_schemas(build_toolset(query, flavour).functions).items():
                    Draft7Validator.check_schema(schema)
                    assert "" not in schema.get("required", []), name
                    checked += 1
    assert checked > 2 * 4000  # 4070 APIs plus one Finish per query, in both flavours


# ---------------------------------------------------------------- calls

@pytest.mark.parametrize(("call", "expected"), [
    (Call("get_weather_for_skycast", '{"city": "Lisbon"}', {"city": "Lisbon"}), []),
    (Call("get_weather_for_skycast", '{"days": 2}', {"days": 2}), [MISSING_REQUIRED]),
    (Call("get_weather_for_skycast", '{"city": "x", "days": "2"}', {"city": "x", "days": "2"}), [WRONG_TYPE]),
    (Call("get_weather_for_skycast", '{"city": "x", "unit": "k"}', {"city": "x", "unit": "k"}), [NOT_IN_ENUM]),
    (Call("get_weather", "{}", {}), [UNKNOWN_FUNCTION]),
    (Call("get_weather_for_skycast", "{oops", None), [ARGUMENTS_NOT_OBJECT]),
    (Call("Finish", '{"return_type": "give_up"}', {"return_type": "give_up"}), [NOT_IN_ENUM]),
    (Call("Finish", '{"return_type": "give_answer", "final_answer": "x"}',
          {"return_type": "give_answer", "final_answer": "x"}), []),
])
def test_call_violations_by_kind(call, expected):
    assert kinds(call_violations(call, FUNCTIONS, check_sent=True)) == expected


def test_extra_parameters_are_valid_unless_the_schema_closes_the_object():
    call = Call("get_weather_for_skycast", '{"city": "x", "q": 1}', {"city": "x", "q": 1})
    assert call_violations(call, FUNCTIONS) == []  # upstream never sets additionalProperties
    closed = [{"name": "f", "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                           "additionalProperties": False}}]
    found = call_violations(Call("f", "", {"city": "x", "q": 1}), closed)
    assert kinds(found) == [UNKNOWN_PARAMETER] and "'q'" in found[0].message


def test_arguments_only_a_repair_rung_decoded_are_flagged_in_runs():
    # react-robust repairs {'city': 'x'} (a Python literal); the tool receives the text as written
    call = Call("get_weather_for_skycast", "{'city': 'x'}", {"city": "x"})
    assert call_violations(call, FUNCTIONS) == []
    assert kinds(call_violations(call, FUNCTIONS, check_sent=True)) == [ARGUMENTS_REPAIRED]


def test_a_turn_without_a_call_is_one_no_call_violation():
    assert kinds(turn_violations(ParsedTurn(parser="x"), FUNCTIONS)[0]) == [NO_CALL]


# ---------------------------------------------------------------- in runs

def bad_then_finish(request):
    """Turn 1: an unknown function; turn 2: a listed one without its required parameter; turn 3: Finish."""
    turn = len(request.key.get("path", []))
    first = request.tools[0]["function"]["name"]
    calls = [("no_such_function", "{}"), (first, "{}"),
             ("Finish", json.dumps({"return_type": "give_answer", "final_answer": "done"}))]
    name, arguments = calls[min(turn, 2)]
    return Completion(tool_calls=[{"id": f"c{turn}", "type": "function",
                                   "function": {"name": name, "arguments": arguments}}])


def test_steps_record_violations_and_the_taxonomy_counts_them(tmp_path):
    cfg = RunConfig(name="v", out_root=str(tmp_path), backend="scripted", dialect="openai-tools",
                    groups=["G1_instruction"])
    manifest = Runner(cfg, backend=ScriptedBackend(script=bad_then_finish), progress=False).run()
    steps = [json.loads(line) for line in (tmp_path / "v" / "steps.jsonl").read_text().splitlines()]
    assert [[v["kind"] for v in s["violations"]] for s in steps] == [[UNKNOWN_FUNCTION], [MISSING_REQUIRED], []]
    assert steps[1]["violations"][0]["message"].startswith("arguments: missing required parameter")
    totals = manifest["totals"]
    assert (totals["model_turns"], totals["valid_turns"], totals["reasks"]) == (3, 1, 0)
    header, rows = taxonomy_tables(read_taxonomy(tmp_path / "v"))["call violations"]
    table = {row[0]: row[-1] for row in rows}
    assert table == {"model turns": "3", "valid turns": "1", "re-asks": "0", UNKNOWN_FUNCTION: "1",
                     MISSING_REQUIRED: "1"}


def test_a_clean_run_has_every_turn_valid(tmp_path):
    cfg = RunConfig(name="c", out_root=str(tmp_path), backend="scripted", dialect="openai-tools")
    totals = Runner(cfg, backend=ScriptedBackend(), progress=False).run()["totals"]
    assert totals["model_turns"] == totals["model_calls"] == totals["valid_turns"] == 12


def test_the_report_names_the_policy_and_the_valid_turns(tmp_path):
    from toolbench_adapter.report.headline import facts
    from toolbench_adapter.report.run_data import load_run

    cfg = RunConfig(name="f", out_root=str(tmp_path), backend="scripted", dialect="openai-tools",
                    groups=["G1_instruction"])
    Runner(cfg, backend=ScriptedBackend(script=bad_then_finish), progress=False).run()
    assert facts(load_run(tmp_path / "f"))["structured"] == (
        "constrain off, on-invalid observe; valid calls on 1 of 3 model turns (33.3%)")


def test_a_schema_no_validator_can_read_accepts_any_object_instead_of_misreporting():
    """A keyword with a value of the wrong kind ("required" as a string, a string minimum) makes the schema
    unreadable: the call is checked as an object only, never reported missing "c", "i", "t", "y"."""
    broken = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": "5"}}, "required": "city"}}}
    assert call_violations(Call("f", '{"n": 1}', {"n": 1}), [broken]) == []
    assert [v.kind for v in call_violations(Call("f", "[1]", [1]), [broken])] == [ARGUMENTS_NOT_OBJECT]
