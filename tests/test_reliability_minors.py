"""Issue 35's minor ones: a reply with "message": null is the endpoint's failure, serve-model answers a tool
without a function object with a 400, and a server's cache file for one API stays bounded."""

from __future__ import annotations

import json
import logging

import pytest
import requests

from runners.failures import MODEL_ENDPOINT
from runners.models.base import ModelRequest
from runners.models.openai_chat import OpenAIChatBackend
from runners.serving.openai_server import LoopbackServer, build_app
from tests.test_models_server import ScriptedBackend
from tests.test_run_identity import RawReply, RawStandin
from toolbench_adapter.server import cache as cache_module
from toolbench_adapter.server.cache import ResponseCache
from toolbench_adapter.server.names import ApiKey


@pytest.mark.parametrize("choice", [{"message": None}, {"finish_reason": "stop"}])
def test_a_reply_without_a_message_is_a_model_endpoint_failure_not_the_models(choice):
    def respond(endpoint, body):
        raise RawReply(200, {"choices": [choice]})

    with RawStandin(respond=respond) as standin:
        completion = OpenAIChatBackend(base_url=standin.url, model=standin.model).complete(
            ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert completion.error_kind == MODEL_ENDPOINT
    assert "choices[0].message is missing or null" in completion.error


@pytest.mark.parametrize("tools,where", [([{"function": 5}], "tools[0].function"),
                                         ([{"type": "function"}], "tools[0].function"),
                                         ([{"function": {"name": 3}}], "tools[0].function"),
                                         ([{"function": {"name": "f", "parameters": []}}], "tools[0].function.parameters")])
def test_serve_model_answers_a_tool_without_a_function_object_with_400(tools, where):
    with LoopbackServer(build_app(ScriptedBackend())) as server:
        reply = requests.post(f"{server.url}/chat/completions", timeout=10,
                              json={"messages": [{"role": "user", "content": "hi"}], "tools": tools})
    assert reply.status_code == 400, reply.text
    assert reply.json()["error"]["message"].startswith(where)


def test_a_servers_cache_file_stops_growing_at_its_bound(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(cache_module, "MAX_FILE_ENTRIES", 3)
    api = ApiKey("Data", "tool_for_Data", "api")
    cache = ResponseCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="toolbench_adapter.server.cache"):
        saved = [cache.store_simulated(api, str({"n": n}), {"error": "", "response": n}) for n in range(6)]
    assert saved == [True, True, True, False, False, False]
    on_disk = json.loads((tmp_path / api.relative_path()).read_text())
    assert list(on_disk) == [str({"n": n}) for n in range(3)]
    assert cache.lookup(api, str({"n": 4})) is None  # served by the simulator, not kept in memory either
    assert cache.lookup(api, str({"n": 1})) is not None
    said = [r.getMessage() for r in caplog.records if "at its bound" in r.getMessage()]
    assert len(said) == 2 and all("api.json holds 3 entries" in line for line in said)  # once per file: the
    assert sum("_simulated" in line for line in said) == 1  # mark file and the main one (stb writes both)


def test_a_cache_file_over_its_byte_bound_takes_no_more(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "MAX_FILE_BYTES", 200)
    api = ApiKey("Data", "tool_for_Data", "api")
    cache = ResponseCache(tmp_path)
    assert cache.store_simulated(api, str({"n": 0}), {"error": "", "response": "x" * 300})
    assert not cache.store_simulated(api, str({"n": 1}), {"error": "", "response": "y"})
    assert list(json.loads((tmp_path / api.relative_path()).read_text())) == [str({"n": 0})]
