"""The offline default's worked example: a function that is not the query's, nothing after the JSON."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

from runners.config import load_yaml
from toolbench_adapter.compat import Compat
from toolbench_adapter.dialects.toolllama import EXAMPLE_FUNCTION, worked_example
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset


def sample_toolsets():
    queries = QuerySet(None)
    return [build_toolset(q, "current", Compat.from_mode("stb")) for group in queries.available_groups()
            for q in queries.load(group)]


@pytest.mark.parametrize("toolset", sample_toolsets(), ids=lambda t: str(t.query.query_id))
def test_example_calls_a_function_that_is_not_the_querys(toolset):
    example = worked_example(toolset)
    actions = re.findall(r"^Action: (.+)$", example, flags=re.M)
    assert actions[-1] == "Finish"
    assert not {f["name"] for f in toolset.inner_functions} & set(actions[:-1])


def test_nothing_but_the_next_step_follows_an_action_input_json():
    example = worked_example(sample_toolsets()[0])
    lines = example.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("Action Input: "):
            json.loads(line[len("Action Input: "):])  # the whole rest of the line is the JSON
            # the call's result as the real history writes it, the next Thought, or the end of the example
            assert index == len(lines) - 1 or lines[index + 1].startswith(("Thought: ", "Function: "))


def test_the_example_answers_from_its_functions_result_not_a_placeholder():
    """call -> result -> Finish: the final answer repeats what the result said (issue 22: with the placeholder
    "<the answer>" a constrained SmolLM2 copied the placeholder instead of finishing from a result)."""
    lines = worked_example(sample_toolsets()[0]).splitlines()
    inputs = [json.loads(line[len("Action Input: "):]) for line in lines if line.startswith("Action Input: ")]
    (result,) = [json.loads(line[len("Function: "):]) for line in lines if line.startswith("Function: ")]
    assert [line.split(": ")[0] for line in lines[1:]] == [
        "Thought", "Action", "Action Input", "Function", "Thought", "Action", "Action Input"]
    answer = inputs[-1]["final_answer"]
    assert inputs[-1]["return_type"] == "give_answer" and "<" not in answer
    assert result["error"] == "" and result["response"]["meaning"] in answer


def test_a_query_function_named_like_the_example_is_avoided():
    toolset = SimpleNamespace(inner_functions=[{"name": EXAMPLE_FUNCTION, "parameters": {}}])
    actions = re.findall(r"^Action: (.+)$", worked_example(toolset), flags=re.M)
    assert actions[0] != EXAMPLE_FUNCTION and actions[0].startswith(EXAMPLE_FUNCTION)


def test_offline_default_leaves_room_for_a_final_answer():
    settings = load_yaml("runners/configs/smollm2.yaml")
    assert settings["dialect_options"]["example"] is True
    assert settings["max_tokens"] >= 256  # 96 cut real Finish calls short
