"""Issue 40: who made a stored tool response, from the response itself (server/provenance.py). Every answer the
schema simulator gives for StableToolBench's APIs is recognised as its own wherever it is copied to, with or
without the API's documentation; a changed value, a real-looking answer or another simulator's is not; a marked
entry names its simulator, and the mark is never served."""

from __future__ import annotations

import copy
import json

import pytest

from toolbench_adapter.server.catalog import ApiCatalog
from toolbench_adapter.server.provenance import (
    MARK,
    UNMARKED,
    is_schema_answer,
    made_by,
    marked,
    parse_key,
    served,
)
from toolbench_adapter.server.simulators import SimulationRequest
from toolbench_adapter.server.simulators.schema import SchemaSimulator


@pytest.fixture(scope="module")
def catalog() -> ApiCatalog:
    found = ApiCatalog()
    found.add_query_files("data/stabletoolbench")
    return found


def inputs_for(doc) -> list:
    """No argument, and every required parameter filled (the answers differ: a missing-parameter message, or a
    filled template)."""
    required = {str(p.get("name")): "x" for p in doc.required_parameters if isinstance(p, dict)}
    return [{}, required, {"q": 1.5, "flag": True, "nested": {"a": [1, None]}}]


def first_leaf_changed(value):
    """The answer with its first string or number changed (None when it holds neither)."""
    if isinstance(value, dict):
        for key, item in value.items():
            changed = first_leaf_changed(item)
            if changed is not None:
                return {**value, key: changed}
    elif isinstance(value, list):
        for index, item in enumerate(value):
            changed = first_leaf_changed(item)
            if changed is not None:
                return [*value[:index], changed, *value[index + 1:]]
    elif isinstance(value, bool) or value is None:
        return None
    elif isinstance(value, int | float):
        return value + 1
    elif isinstance(value, str):
        return value + "!"
    return None


def test_every_schema_answer_for_stabletoolbenchs_apis_is_recognised_and_a_changed_one_is_not(catalog):
    checked = 0
    for key, doc in catalog.apis.items():
        for tool_input in inputs_for(doc):
            cache_key = str(tool_input)
            answer = SchemaSimulator().simulate(SimulationRequest(key, tool_input, cache_key, doc)).answer
            stored = json.loads(json.dumps(answer))  # as a cache file holds it
            parsed, back = parse_key(cache_key)
            assert parsed and back == tool_input
            assert is_schema_answer(stored, key, back, cache_key, doc), (key, tool_input)
            assert made_by(stored, key, back, cache_key, doc) == "schema"
            changed = first_leaf_changed(stored["response"])
            if changed is not None:
                assert not is_schema_answer({**stored, "response": changed}, key, back, cache_key, doc), key
            checked += 1
    assert checked == 3 * len(catalog.apis) > 3000


def test_an_answer_made_without_documentation_is_recognised_by_a_reader_that_has_it(catalog):
    key, doc = next(iter(catalog.apis.items()))
    answer = SchemaSimulator().simulate(SimulationRequest(key, {"a": 1}, str({"a": 1}), None)).answer
    assert is_schema_answer(json.loads(json.dumps(answer)), key, {"a": 1}, str({"a": 1}), doc)


@pytest.mark.parametrize("answer", [
    {"error": "", "response": "{\"results\": [1, 2]}"},
    {"error": "", "response": {"status": "success", "api": "x", "query": {}, "results": []}},
    {"error": "Rate limit", "response": ""},
    {"error": "", "response": {"message": "Missing required parameter: zz"}},
    ["not", "an", "answer"],
])
def test_real_looking_answers_are_not_the_schema_simulators(catalog, answer):
    key, doc = next(iter(catalog.apis.items()))
    assert not is_schema_answer(answer, key, {}, "{}", doc)
    assert made_by(answer, key, {}, "{}", doc) is None
    assert made_by(answer, key, {}, "{}", doc, in_mirror=True) == UNMARKED


def test_a_mark_names_its_simulator_and_is_never_served(catalog):
    key, doc = next(iter(catalog.apis.items()))
    answer = {"error": "", "response": "made by a model"}
    stored = marked(answer, "llm")
    assert stored[MARK] == "llm" and made_by(stored, key, {}, "{}", doc) == "llm"
    assert served(stored) == answer and MARK not in served(stored)
    assert served(copy.deepcopy(answer)) == answer


@pytest.mark.parametrize("key", ["{'a': 1", "x" * 200_000, "__import__('os')", "[" * 5000 + "]" * 5000])
def test_a_key_that_is_no_literal_is_not_parsed(key):
    parsed, _ = parse_key(key)
    assert not parsed or key.startswith("[")  # a deep list may parse or be refused, never raise
