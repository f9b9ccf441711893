"""Recorded schemas that cannot be checked (issue 35 item 1 and its minor): a backtracking pattern, a pattern
Python cannot compile, a schema nested ~300 deep. Each is a problem of that function's schema, recorded and
counted apart, never a hang or a harness error; under --constrain the function goes unconstrained, said why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_hostile_inputs import good_answer, write
from toolbench_adapter.parsers.base import Call
from toolbench_adapter.parsers.schema import OTHER_SCHEMA, SCHEMA_UNCHECKED, call_violations
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.toolset import Toolset
from toolbench_adapter.structured.describe import turns_text
from toolbench_adapter.structured.rates import query_stats, total_stats

PROJECT = Path(__file__).resolve().parent.parent
BACKTRACKS = "^(a|aa)+$"  # re.search on 60 'a' and '!' takes ~fib(60) steps


def function(parameter: dict) -> list[dict]:
    return [{"name": "f", "description": "d",
             "parameters": {"type": "object", "properties": {"x": parameter}, "required": []}}]


def kinds(found):
    return [v.kind for v in found]


def nested(depth: int) -> dict:
    inner: dict = {"type": "string"}
    for _ in range(depth):
        inner = {"type": "object", "properties": {"k": inner}}
    return inner


def test_a_backtracking_pattern_is_a_schema_problem_not_a_hang():
    code = ("from toolbench_adapter.parsers.base import Call; from toolbench_adapter.parsers.schema import "
            "call_violations as v; import json; f=[{'name':'f','parameters':{'type':'object','properties':"
            f"{{'x':{{'type':'string','pattern':{BACKTRACKS!r}}}}}}}}}]; a={{'x':'a'*60+'!'}}; "
            "print(json.dumps([x.as_dict() for x in v(Call('f',json.dumps(a),a),f)]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=30)
    found = json.loads(done.stdout)
    assert [v["kind"] for v in found] == [SCHEMA_UNCHECKED]
    assert found[0]["message"].startswith(f"schema not checkable: pattern '{BACKTRACKS}' ran past")


def test_patterns_still_check_and_uncompilable_or_deep_schemas_are_unchecked():
    good = function({"type": "string", "pattern": "^[a-z]+$"})
    assert kinds(call_violations(Call("f", "", {"x": "abc"}), good)) == []
    assert kinds(call_violations(Call("f", "", {"x": "ab1"}), good)) == [OTHER_SCHEMA]
    broken = call_violations(Call("f", "", {"x": "a"}), function({"type": "string", "pattern": "(a"}))
    assert kinds(broken) == [SCHEMA_UNCHECKED] and "pattern '(a' does not compile" in broken[0].message
    deep = call_violations(Call("f", "", {"x": {}}), function(nested(300)))
    assert kinds(deep) == [SCHEMA_UNCHECKED] and "nested too deeply" in deep[0].message


def test_unchecked_turns_are_counted_apart_from_valid_and_invalid_ones():
    unchecked = {"kind": SCHEMA_UNCHECKED, "function": "f", "message": "schema not checkable: x"}
    records = [{"turn": 1, "violations": [unchecked]}, {"turn": 2, "violations": []},
               {"turn": 3, "violations": [{"kind": "wrong_type"}, unchecked]}]
    stats = query_stats(records)
    assert stats == {"model_turns": 2, "valid_turns": 1, "reasks": 0, "unchecked_turns": 1}
    assert "1 turns not checkable" in turns_text(total_stats([stats]))


def test_replay_of_recorded_schemas_that_cannot_be_checked_finishes_and_records_each(tmp_path):
    """A backtracking pattern hung replay (Ctrl-C too); an uncompilable pattern or a schema ~300 deep made the
    query a harness_error: now each replays, its call's check says why the schema could not be checked."""
    schemas = {1: {"type": "string", "pattern": BACKTRACKS}, 2: {"type": "string", "pattern": "(a"}, 3: nested(300)}
    for query_id, schema in schemas.items():
        answer = good_answer(query_id, "a" * 60 + "!")
        for entry in answer["answer_generation"]["function"]:
            if entry["name"] != "Finish":
                entry["parameters"]["properties"]["city"] = schema
        write(tmp_path / "answers", f"{query_id}_CoT@1.json", answer)
    out = tmp_path / "replays"
    done = subprocess.run([sys.executable, "-m", "runners.cli", "replay", str(tmp_path / "answers"), "--name", "r",
                           "--out-root", str(out)], cwd=PROJECT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0 and "replayed 3 of 3 files" in done.stdout, done.stdout + done.stderr
    steps = [json.loads(line) for line in next(out.rglob("steps.jsonl")).read_text().splitlines()]
    first = {record["query_id"]: record["violations"] for record in steps if record["turn"] == 1}
    assert {query_id: [v["kind"] for v in found] for query_id, found in first.items()} == {
        1: [SCHEMA_UNCHECKED], 2: [SCHEMA_UNCHECKED], 3: [SCHEMA_UNCHECKED]}
    assert "ran past" in first[1][0]["message"] and "does not compile" in first[2][0]["message"]
    assert "nested too deeply" in first[3][0]["message"]
    manifest = json.loads(next(out.rglob("manifest.json")).read_text())
    assert manifest["totals"]["unchecked_turns"] == 3 and not manifest["totals"]["infra_failures"]


def test_constrain_leaves_a_schema_the_grammar_compiler_refuses_unconstrained():
    pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
    from toolbench_adapter.structured.grammar import reply_constraint

    functions = function({"type": "string", "minLength": 5, "maxLength": 2}) + [
        {"name": "g", "parameters": {"type": "object", "properties": {"y": {"type": "integer"}}}}]
    toolset = Toolset(Query(query_id=1, group="G1_instruction", query="q", api_list=[]), "current", functions, {})
    for dialect in ("toolllama", "json-object", "jsonl", "hermes"):
        prefill = "Thought: " if dialect == "toolllama" else ""
        constraint = reply_constraint(dialect, toolset, prefill, 64)
        assert [name for name, _ in constraint.unconstrained] == ["f"], dialect
        assert "minLength 5 is greater than maxLength 2" in constraint.unconstrained[0][1]
        assert "/project/cpp" not in constraint.unconstrained[0][1]
