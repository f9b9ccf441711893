"""ToolEnv.step: Finish branches, status codes 0-12, name lookup (exact vs suffix), truncation."""

from __future__ import annotations

import copy
import json

import pytest

from toolbench_adapter.compat import STB, STRICT
from toolbench_adapter.env import ToolEnv, render, truncate
from toolbench_adapter.protocol import env as E
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.server.client import ReplyKind, ServerReply


def _api(name: str, tool: str = "Weather Tool", category: str = "Weather") -> dict:
    return {"category_name": category, "tool_name": tool, "api_name": name, "api_description": "",
            "required_parameters": [], "optional_parameters": [], "method": "GET"}


# "my search" comes first, so upstream's endswith() picks it for the exact name "search_for_weather_tool"
TOOLSET = build_toolset(Query(query_id=1, group="G1_instruction", query="q",
                              api_list=[_api("my search"), _api("search"), _api("forecast")]))


class FakeClient:
    def __init__(self, reply: ServerReply | None = None):
        self.reply = reply or ok({"error": "", "response": "fine"})
        self.calls = []

    def call_route(self, route, tool_input):
        self.calls.append((route, tool_input))
        return self.reply


def ok(answer) -> ServerReply:
    return ServerReply(answer=answer, kind=ReplyKind.OK, http_status=200, latency_s=0.01, attempts=1, waited_s=0.0)


def env(reply=None, compat=STB, **kwargs) -> ToolEnv:
    return ToolEnv(TOOLSET, FakeClient(reply), compat, **kwargs)


# ---------------------------------------------------------------- Finish

@pytest.mark.parametrize("compat", [STB, STRICT])
def test_finish_give_answer_sets_success(compat):
    e = env(compat=compat)
    result = e.step("Finish", json.dumps({"return_type": "give_answer", "final_answer": "42"}))
    assert (result.observation, result.status) == (E.FINISH_SUCCESS, 3)
    assert result.final_answer == "42" and result.finish_type == "give_answer" and result.is_final
    assert e.success == 1 and e.final_answer == "42"
    assert e.client.calls == []  # Finish never reaches the server


def test_finish_give_up():
    e = env()
    result = e.step("Finish", '{"return_type": "give_up_and_restart"}')
    assert (result.observation, result.status) == (E.FINISH_GIVE_UP, 4)
    assert result.gave_up and e.success == 0 and e.finish_type == "give_up_and_restart"


@pytest.mark.parametrize("raw, observation", [
    ('{"final_answer": "x"}', E.FINISH_NO_RETURN_TYPE),
    ("not json at all", E.FINISH_NO_RETURN_TYPE),
    ('{"return_type": "give_answer"}', E.FINISH_NO_FINAL_ANSWER),
    ('{"return_type": "maybe", "final_answer": "x"}', E.FINISH_BAD_RETURN_TYPE),
])
def test_finish_input_errors_are_status_2(raw, observation):
    e = env()
    result = e.step("Finish", raw)
    assert (result.observation, result.status) == (observation, 2)
    assert e.success == 0 and result.final_answer is None


def test_finish_heuristic_only_in_stb_mode():
    # no space after the colon: upstream's heuristic cannot see it, the robust reader can
    raw = '{"return_type":"give_answer","final_answer":"Paris'
    assert env(compat=STB).step("Finish", raw).status == 2
    strict = env(compat=STRICT).step("Finish", raw)
    assert strict.status == 3 and strict.final_answer.startswith("Paris")
    # exactly one space: the heuristic reads it and keeps the tail, junk included
    stb = env(compat=STB).step("Finish", '{"return_type": "give_answer", "final_answer": "Paris"} trailing')
    assert stb.status == 3 and stb.final_answer == 'Paris"} trailing'


def test_finish_acknowledgement_is_truncated_too():
    result = env(max_observation_length=10).step("Finish", '{"return_type": "give_up_and_restart"}')
    assert result.observation == E.FINISH_GIVE_UP[:10] + "..." and result.truncated


# ---------------------------------------------------------------- server answers -> status codes

@pytest.mark.parametrize("error, status", [(k, v) for k, v in E.SERVER_ERROR_STATUS.items()] + [
    ("", 0), (E.TOOL_INPUT_PARSE_ERROR, 0), (E.FAKE_RESPONSE_FAILED, 0), ("Rate limit error...", 0)])
def test_server_error_strings_map_to_status(error, status):
    answer = {"error": error, "response": ""}
    result = env(ok(answer)).step("forecast_for_weather_tool", "{}")
    assert result.status == status
    assert result.observation == json.dumps(answer)


def test_observation_is_pure_json_with_ascii_escapes_and_key_order():
    answer = {"response": {"city": "Zürich", "b": 1, "a": [1.5, None, True]}, "error": ""}
    result = env(ok(answer)).step("forecast_for_weather_tool", '{"city": "Zürich"}')
    assert result.observation == '{"response": {"city": "Z\\u00fcrich", "b": 1, "a": [1.5, null, true]}, "error": ""}'
    assert result.status == 0 and result.source == "server"


def test_missing_error_key_is_status_0_and_flagged():
    result = env(ok({"response": "no error key"})).step("forecast_for_weather_tool", "{}")
    assert result.status == 0 and result.missing_error_key
    assert result.observation == '{"response": "no error key"}'


def test_non_object_json_is_status_12():
    result = env(ok(["a", "list"])).step("forecast_for_weather_tool", "{}")
    assert result.status == 12
    assert result.observation == json.dumps({"error": E.REQUEST_INVALID_ERROR, "response": ""})


@pytest.mark.parametrize("kind, http_status, answer, status", [
    (ReplyKind.HTTP_ERROR, 500, {"error": "request invalid, data error. status_code=500", "response": ""}, 12),
    (ReplyKind.NOT_JSON, 200, {"error": "request invalid, data error", "response": ""}, 12),
    (ReplyKind.TIMEOUT, None, {"error": "Timeout error...", "response": ""}, 5),
    (ReplyKind.CONNECTION_ERROR, None, {"error": "Timeout error...", "response": ""}, 5),
])
def test_client_failures_map_to_status(kind, http_status, answer, status):
    reply = ServerReply(answer=answer, kind=kind, http_status=http_status, latency_s=0.1, attempts=3, waited_s=0)
    result = env(reply).step("forecast_for_weather_tool", "{}")
    assert (result.status, result.observation) == (status, json.dumps(answer))
    assert result.reply_kind == kind.value and result.attempts == 3


def test_route_and_raw_arguments_reach_the_client():
    e = env()
    e.step("forecast_for_weather_tool", '{"city":"Oslo"}')
    route, tool_input = e.client.calls[0]
    assert (route.category, route.tool_name, route.api_name) == ("Weather", "weather_tool", "forecast")
    assert tool_input == '{"city":"Oslo"}'  # sent raw, as upstream does


# ---------------------------------------------------------------- name lookup

def test_unknown_name_is_status_1_with_upstream_json():
    result = env(compat=STRICT).step("nowcast_for_weather_tool", "{}")
    assert result.status == 1 and result.function_name is None and result.source == "lookup"
    assert result.observation == '{"error": "No such function name: nowcast_for_weather_tool", "response": ""}'


def test_exact_name_where_suffix_match_picks_another_function():
    stb = env(compat=STB).step("search_for_weather_tool", "{}")
    strict = env(compat=STRICT).step("search_for_weather_tool", "{}")
    assert stb.function_name == "my_search_for_weather_tool"  # upstream's first endswith() hit
    assert strict.function_name == "search_for_weather_tool"
    assert stb.suffix_match_differs and strict.suffix_match_differs
    assert stb.route.api_name == "my_search" and strict.route.api_name == "search"


def test_partial_and_empty_names_only_match_in_stb_mode():
    for name, expected in [("cast_for_weather_tool", "forecast_for_weather_tool"),
                           ("", "my_search_for_weather_tool"), ("weather_tool", "my_search_for_weather_tool")]:
        stb = env(compat=STB).step(name, "{}")
        assert stb.status == 0 and stb.function_name == expected and stb.suffix_match_differs
        strict = env(compat=STRICT).step(name, "{}")
        assert strict.status == 1 and strict.suffix_match_differs


def test_agreeing_lookup_is_not_flagged():
    result = env(compat=STB).step("forecast_for_weather_tool", "{}")
    assert result.function_name == "forecast_for_weather_tool" and not result.suffix_match_differs


def test_suffix_hit_on_finish_only_is_status_1():
    result = env(compat=STB).step("nish", "{}")  # upstream would crash with a KeyError here
    assert result.status == 1


# ---------------------------------------------------------------- truncation

def test_truncation_exactly_at_1024_plus_dots():
    answer = {"error": "", "response": "x" * 2000}
    full = json.dumps(answer)
    result = env(ok(answer)).step("forecast_for_weather_tool", "{}")
    assert result.observation == full[:1024] + "..." and len(result.observation) == 1027 and result.truncated


def test_no_truncation_at_exactly_1024():
    padding = 1024 - len(json.dumps({"error": "", "response": ""}))
    answer = {"error": "", "response": "y" * padding}
    assert len(json.dumps(answer)) == 1024
    result = env(ok(answer)).step("forecast_for_weather_tool", "{}")
    assert result.observation == json.dumps(answer) and not result.truncated


def test_truncate_and_render_helpers():
    assert truncate("abcdef", 3) == "abc..." and truncate("abc", 3) == "abc"
    assert render({"b": "é", "a": 1}) == '{"b": "\\u00e9", "a": 1}'


# ---------------------------------------------------------------- branch copies

def test_copy_shares_toolset_and_client_but_not_state():
    e = env()
    branch = copy.deepcopy(e)
    assert branch.toolset is e.toolset and branch.client is e.client
    branch.step("Finish", '{"return_type": "give_answer", "final_answer": "a"}')
    assert branch.success == 1 and e.success == 0 and e.final_answer is None
