"""The project's own offline sample set (data/sample): StableToolBench's format, our tools, every quirk once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolbench_adapter.compat import STRICT
from toolbench_adapter.errors import InputError
from toolbench_adapter.naming import pure_api_name, standardize
from toolbench_adapter.protocol.functions import FUNCTION_NAME_JOIN, FUNCTION_NAME_MAX_LENGTH, RESERVED_NAMES
from toolbench_adapter.protocol.prompts import TOOL_DESCRIPTION_MAX_LENGTH
from toolbench_adapter.queryset.queries import GROUPS, QuerySet
from toolbench_adapter.queryset.toolset import build_toolset

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"
TOOL_ROOT = SAMPLE / "toolenv" / "tools"
UNLISTED = ("G1_instruction", 900002)  # documented in data/README.md
PARAMETER_TYPES = {"STRING", "string", "NUMBER", "BOOLEAN", "ENUM", "DATE (YYYY-MM-DD)"}
TEMPLATE_LEAVES = {"str", "int", "float", "bool"}
MAX_QUERIES = 8


@pytest.fixture(scope="module")
def query_set() -> QuerySet:
    return QuerySet(SAMPLE)


@pytest.fixture(scope="module")
def queries(query_set):
    return list(query_set.iter())


@pytest.fixture(scope="module")
def raw_queries() -> dict[str, list[dict]]:
    """Every query of every instruction file, listed or not."""
    folder = SAMPLE / "solvable_queries" / "test_instruction"
    return {group: json.loads((folder / f"{group}.json").read_text(encoding="utf-8")) for group in GROUPS}


@pytest.fixture(scope="module")
def toolsets(queries):
    return {q.query_id: build_toolset(q, tool_root=TOOL_ROOT) for q in queries}


def all_apis(raw_queries):
    for items in raw_queries.values():
        for item in items:
            yield from item["api_list"]


def tool_file(category: str, tool_name: str) -> dict:
    return json.loads((TOOL_ROOT / category / f"{standardize(tool_name)}.json").read_text(encoding="utf-8"))


def test_all_six_groups_load_in_canonical_order(query_set):
    assert query_set.available_groups() == list(GROUPS)
    assert all(count >= 1 for count in query_set.counts().values())


def test_sample_set_is_the_default_root(monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    assert QuerySet().root.resolve() == SAMPLE.resolve()


def test_query_ids_are_unique_and_in_the_project_range(raw_queries):
    ids = [item["query_id"] for items in raw_queries.values() for item in items]
    assert all(isinstance(i, int) and i >= 900001 for i in ids)
    assert len(ids) == len(set(ids))
    assert len(ids) <= MAX_QUERIES


def test_listed_ids_exist_and_use_upstream_id_file_shape(raw_queries):
    folder = SAMPLE / "solvable_queries" / "test_query_ids"
    for group in GROUPS:
        listed = json.loads((folder / f"{group}.json").read_text(encoding="utf-8"))
        assert set(listed.values()) == {0}
        present = {str(item["query_id"]) for item in raw_queries[group]}
        assert set(listed) <= present, f"{group} lists ids with no query"


def test_unlisted_query_is_filtered_out(query_set, raw_queries):
    group, qid = UNLISTED
    assert qid in [item["query_id"] for item in raw_queries[group]]
    assert qid not in [q.query_id for q in query_set.load(group)]
    with pytest.raises(InputError, match=str(qid)):
        query_set.get(group, qid)
    unlisted_elsewhere = [
        item["query_id"]
        for g, items in raw_queries.items()
        for item in items
        if item["query_id"] not in {q.query_id for q in query_set.load(g)}
    ]
    assert unlisted_elsewhere == [qid]


def test_group_shapes_follow_the_benchmark(queries):
    for query in queries:
        tools = {api["tool_name"] for api in query.api_list}
        categories = {api["category_name"] for api in query.api_list}
        if query.group.startswith("G1"):
            assert len(tools) == 1 and 1 <= len(query.api_list) <= 4, query.query_id
        elif query.group.startswith("G2"):
            assert 2 <= len(tools) <= 3 and len(categories) == 1, query.query_id
        else:
            assert 2 <= len(tools) <= 3 and len(categories) >= 2, query.query_id


def test_relevant_apis_are_offered_to_the_model(raw_queries):
    for items in raw_queries.values():
        for item in items:
            offered = {(api["tool_name"], api["api_name"]) for api in item["api_list"]}
            assert item["relevant APIs"], item["query_id"]
            assert {tuple(pair) for pair in item["relevant APIs"]} <= offered, item["query_id"]


def test_every_tool_has_a_file_whose_description_reaches_the_task_description(queries, toolsets):
    for query in queries:
        task = toolsets[query.query_id].task_description()
        for api in query.api_list:
            data = tool_file(api["category_name"], api["tool_name"])
            assert data["tool_name"] == api["tool_name"]
            shown = data["tool_description"][:TOOL_DESCRIPTION_MAX_LENGTH].replace("\n", "").strip()
            assert shown and f".{standardize(api['tool_name'])}: {shown}\n" in task


def test_tool_files_agree_with_query_api_lists(raw_queries):
    for api in all_apis(raw_queries):
        data = tool_file(api["category_name"], api["tool_name"])
        assert data["pricing"] == "FREE" and data["host"] in data["home_url"]
        entries = {entry["name"]: entry for entry in data["api_list"]}
        entry = entries[api["api_name"]]
        assert entry["description"] == api["api_description"]
        assert entry["required_parameters"] == api["required_parameters"]
        assert entry["optional_parameters"] == api["optional_parameters"]
        assert entry["method"] == api["method"] and entry["statuscode"] == 200
        assert entry["url"].startswith(f"https://{data['host']}/")


def test_tool_file_stems_are_standardized_names():
    files = sorted(TOOL_ROOT.glob("*/*.json"))
    assert files
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        assert path.stem == standardize(data["tool_name"])
    # at least one name needs real normalisation (spaces, punctuation, a leading digit)
    assert any(standardize(json.loads(p.read_text(encoding="utf-8"))["tool_name"]).startswith("get_")
               for p in files)


def test_parameters_use_upstream_types(raw_queries):
    seen = set()
    for api in all_apis(raw_queries):
        for param in api["required_parameters"] + api["optional_parameters"]:
            assert set(param) == {"name", "type", "description", "default"}
            seen.add(param["type"])
    assert seen <= PARAMETER_TYPES
    assert {"STRING", "NUMBER", "BOOLEAN", "ENUM", "DATE (YYYY-MM-DD)"} <= seen


def test_dropped_optional_quirk_occurs(queries, toolsets):
    hits = 0
    for query in queries:
        corrected = build_toolset(query, compat=STRICT, tool_root=TOOL_ROOT).functions[:-1]
        as_upstream = toolsets[query.query_id].functions[:-1]  # Finish is last
        for api, stb_fn, strict_fn in zip(query.api_list, as_upstream, corrected, strict=True):
            if not api["required_parameters"] and api["optional_parameters"]:
                assert stb_fn["parameters"]["properties"] == {}
                assert len(strict_fn["parameters"]["optional"]) == len(api["optional_parameters"])
                hits += 1
    assert hits >= 1


def test_function_name_cut_to_64_characters_occurs(queries, toolsets):
    hits = 0
    for query in queries:
        routes = toolsets[query.query_id].routes
        for api in query.api_list:
            full = pure_api_name(api["api_name"]) + FUNCTION_NAME_JOIN + standardize(api["tool_name"])
            if len(full) > FUNCTION_NAME_MAX_LENGTH:
                cut = full[-FUNCTION_NAME_MAX_LENGTH:]
                assert cut in routes and routes[cut].api_name == pure_api_name(api["api_name"])
                hits += 1
    assert hits >= 1


def test_change_name_on_reserved_parameters_occurs(queries, toolsets):
    hits = 0
    for query in queries:
        for api, function in zip(query.api_list, toolsets[query.query_id].functions[:-1], strict=True):
            for param in api["required_parameters"]:
                if param["name"] in RESERVED_NAMES:
                    assert "is_" + param["name"] in function["parameters"]["required"]
                    hits += 1
    assert hits >= 1


def test_function_names_are_unique_per_query(toolsets):
    for toolset in toolsets.values():
        assert len(toolset.names) == len(set(toolset.names))
        assert toolset.names[-1] == "Finish"


def _check_template(node, where):
    if isinstance(node, dict):
        assert node, f"empty object at {where}"
        for key, value in node.items():
            if key == "_list_length":
                assert isinstance(value, int) and value > 0, where
            else:
                _check_template(value, f"{where}.{key}")
    elif isinstance(node, list):
        assert len(node) == 1, f"a template list holds one item schema at {where}"
        item = node[0]
        if isinstance(item, dict):
            assert "_list_length" in item, where
            _check_template(item, f"{where}[]")
        else:
            assert isinstance(item, str) and item.startswith("list of str with length "), where
    else:
        assert node in TEMPLATE_LEAVES, f"unexpected leaf {node!r} at {where}"


def test_every_api_has_a_template_response(raw_queries):
    for api in all_apis(raw_queries):
        template = api.get("template_response")
        assert isinstance(template, dict), api["api_name"]
        _check_template(template, api["api_name"])


def test_tool_file_examples_match_their_templates(raw_queries):
    """test_endpoint holds one concrete response; its keys are the template's keys."""
    for api in all_apis(raw_queries):
        entry = {e["name"]: e for e in tool_file(api["category_name"], api["tool_name"])["api_list"]}[api["api_name"]]
        template_keys = {k for k in api["template_response"] if k != "_list_length"}
        assert set(entry["test_endpoint"]) == template_keys, api["api_name"]
