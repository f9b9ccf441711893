"""Functions and messages equal what released answer files store, byte for byte."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from toolbench_adapter.compat import Compat
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import api_to_function, build_toolset, functions_json


def answer_files(stb_root):
    files = sorted((stb_root / "data_example" / "answer").glob("*/*/*.json"))
    assert len(files) == 6
    return files


def query_of(stb_root, path):
    group = path.parent.name
    qid = path.name.split("_")[0]
    return QuerySet(stb_root).get(group, qid)


def test_functions_equal_released_answer_functions(stb_root):
    for path in answer_files(stb_root):
        stored = json.loads(path.read_text())["answer_generation"]["function"]
        toolset = build_toolset(query_of(stb_root, path), "legacy")
        # same JSON text, same key order
        assert json.dumps(toolset.functions) == json.dumps(stored), path.name


def test_cli_functions_legacy_equals_released(stb_root, project_root):
    path = answer_files(stb_root)[0]
    stored = json.loads(path.read_text())["answer_generation"]["function"]
    out = subprocess.run(
        [sys.executable, "-m", "runners.cli", "functions", "--stb-root", str(stb_root), "--group",
         path.parent.name, "--query-id", path.name.split("_")[0], "--flavour", "legacy"],
        capture_output=True, text=True, cwd=project_root, check=True).stdout
    assert out == json.dumps(stored, indent=2, ensure_ascii=False) + "\n"


def test_current_flavour_wraps_and_leads_with_empty_string(stb_root):
    query = QuerySet(stb_root).get("G1_instruction", 1073)
    legacy = build_toolset(query, "legacy").functions
    current = build_toolset(query, "current").functions
    assert all(f["type"] == "function" for f in current)
    for old, new in zip(legacy[:-1], current[:-1], strict=True):
        inner = new["function"]
        assert inner["parameters"]["required"] == [""] + old["parameters"]["required"]
        assert inner["parameters"]["optional"] == [""] + old["parameters"]["optional"]
        assert inner["name"] == old["name"] and inner["description"] == old["description"]
    # Finish: wrapped, but no leading "" and no optional list
    assert current[-1]["function"] == legacy[-1]
    assert legacy[-1]["parameters"]["required"] == ["return_type"]


def test_system_and_user_messages_equal_released(stb_root, tmp_path):
    """Rebuild a tool env holding the descriptions the released run had; the messages then match exactly."""
    checked = 0
    for path in answer_files(stb_root):
        data = json.loads(path.read_text())
        if not data["answer_generation"]["train_messages"]:  # invalid answers store no messages
            continue
        stored = data["answer_generation"]["train_messages"][-1][:2]
        checked += 1
        query = query_of(stb_root, path)
        lines = stored[0]["content"].split("You have access of the following tools:\n")[1].splitlines()
        tool_root = tmp_path / path.stem
        for line in lines:
            number, rest = line.split(".", 1)
            tool, desc = rest.split(": ", 1)
            category = next(a["category_name"] for a in query.api_list if a["tool_name"])
            target = tool_root / category / f"{tool}.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(json.dumps({"tool_name": tool, "tool_description": desc}))
        toolset = build_toolset(query, "legacy", tool_root=tool_root)
        assert initial_messages(toolset) == stored, path.name
    assert checked == 5


def test_task_description_without_tool_env_says_none(stb_root):
    toolset = build_toolset(QuerySet(stb_root).get("G1_instruction", 1073))
    assert toolset.task_description().endswith("1.keyword_analysis: None\n")


def test_routes_keep_untruncated_api_names(stb_root):
    queries = QuerySet(stb_root)
    seen_truncated = 0
    for query in queries.iter():
        toolset = build_toolset(query)
        assert len(toolset.routes) == len({f["name"] for f in toolset.functions[:-1]})
        for name, route in toolset.routes.items():
            assert len(name) <= 64
            full = route.api_name + "_for_" + route.tool_name
            assert full.endswith(name)
            seen_truncated += full != name
            assert route.category in {a["category_name"] for a in query.api_list}
    assert seen_truncated > 0


def test_dropped_optional_quirk_is_switchable():
    api = {"api_name": "List things", "api_description": "", "required_parameters": [],
           "optional_parameters": [{"name": "limit", "type": "NUMBER", "description": "max", "default": 5}]}
    upstream = api_to_function(api, "tool", "legacy", Compat.from_mode("stb"))
    assert upstream["parameters"]["properties"] == {}
    fixed = api_to_function(api, "tool", "legacy", Compat.from_mode("strict"))
    assert fixed["parameters"]["properties"] == {"limit": {"type": "integer", "description": "max", "example_value": 5}}
    assert fixed["parameters"]["optional"] == ["limit"]


def test_parameter_rules():
    api = {"api_name": "Get by id", "api_description": " Get by id quickly ",
           "required_parameters": [
               {"name": "id", "type": "STRING", "description": "x" * 300, "default": ""},
               {"name": "flag", "type": "BOOLEAN", "description": "f", "default": None},
               {"name": "when", "type": "DATE (YYYY-MM-DD)", "description": "d", "default": "2020-01-01"}],
           "optional_parameters": [{"name": "n", "type": "string", "description": "", "default": 3}]}
    fn = api_to_function(api, "tool")
    props = fn["parameters"]["properties"]
    assert list(props) == ["is_id", "flag", "when", "n"]
    assert len(props["is_id"]["description"]) == 256 and "example_value" not in props["is_id"]
    assert props["flag"] == {"type": "boolean", "description": "f", "example_value": None}  # str(None) counts
    assert props["when"]["type"] == "string" and props["n"]["type"] == "string"
    assert props["n"]["example_value"] == 3
    # the raw api name inside the description is replaced by the function name; no space between sentences
    assert fn["description"] == ('This is the subfunction for tool "tool", you can use this tool.'
                                 'The description of this function is: "get_by_id_for_tool quickly"')


def test_functions_json_text_is_indent_2(stb_root):
    toolset = build_toolset(QuerySet(stb_root).get("G1_instruction", 588))
    assert re.match(r'^\[\n  \{\n    "name": ', functions_json(toolset))


@pytest.mark.parametrize("group,count", [("G1_instruction", 163), ("G1_category", 153), ("G1_tool", 158),
                                         ("G2_instruction", 106), ("G2_category", 124), ("G3_instruction", 61)])
def test_group_counts(stb_root, group, count):
    assert len(QuerySet(stb_root).load(group)) == count


def test_upstream_api_statistics(stb_root):
    apis = [api for query in QuerySet(stb_root).iter() for api in query.api_list]
    assert len(apis) == 4070
    dropped = sum(1 for a in apis if not a.get("required_parameters") and a.get("optional_parameters"))
    assert dropped == 402


def test_example_root_filters_ids(stb_root):
    example = QuerySet(Path(stb_root) / "solvable_queries_example")
    assert [q.query_id for q in example.load("G1_instruction")] == [588, 608, 1073]
