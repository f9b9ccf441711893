"""The model-backed simulators against a real loopback stand-in for an OpenAI-compatible endpoint."""

from __future__ import annotations

import json

import pytest

from toolbench_adapter.protocol import env as E
from toolbench_adapter.registry import UnknownNameError
from toolbench_adapter.server.catalog import ApiDoc
from toolbench_adapter.server.names import api_key_for
from toolbench_adapter.server.simulators import SIMULATORS, SimulationRequest, SimulatorOptions, make_simulator
from toolbench_adapter.server.simulators.llm import SYSTEM_PROMPT
from toolbench_adapter.server.simulators.mirrorapi import STAND_IN_SYSTEM_PROMPT, parse_answer
from toolbench_adapter.server.standin import Reply, StandInServer

KEY = api_key_for("Weather", "sky", "now")
DOC = ApiDoc(key=KEY, api_name="Now", tool_name="Sky", category_name="Weather", api_description="Weather now.",
             required_parameters=[{"name": "city", "type": "STRING"}], tool_description="Skies.")
REQUEST = SimulationRequest(key=KEY, tool_input={"city": "Oslo", "toolbench_key": "secret"},
                            cache_key="{'city': 'Oslo'}", doc=DOC,
                            examples=[("{'city': 'Rome'}", {"error": "", "response": {"temp": 30}})])


def completion(text: str) -> Reply:
    return Reply(body={"choices": [{"message": {"role": "assistant", "content": text}}]})


def scripted(*texts):
    replies = iter(texts)
    return lambda exchange: completion(next(replies))


def options(server, **kw) -> SimulatorOptions:
    settings = {"attempts": 3, "timeout_s": 5, **kw}
    return SimulatorOptions(base_url=server.url + "/v1", model="sim-model", **settings)


def test_registry_lists_the_simulators_and_suggests():
    assert {"schema", "llm", "mirrorapi", "none"} <= set(SIMULATORS.names())
    with pytest.raises(UnknownNameError, match="did you mean|Did you mean"):
        make_simulator("schem")


def test_llm_retries_until_the_answer_has_error_and_response():
    texts = ("not json", '{"response": "no error key"}', '```json\n{"error": "", "response": {"temp": 12}}\n```')
    with StandInServer(scripted(*texts)) as server:
        result = make_simulator("llm", options(server)).simulate(REQUEST)
    assert result.answer == {"error": "", "response": {"temp": 12}} and result.cacheable
    assert len(server.exchanges) == 3
    sent = server.exchanges[0].json()
    assert server.exchanges[0].path == "/v1/chat/completions"
    assert sent["model"] == "sim-model" and sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    user = sent["messages"][1]["content"]
    assert "Weather now." in user and "{'city': 'Rome'}" in user and '"Oslo"' in user


def test_llm_gives_upstreams_failure_answer_after_the_last_attempt():
    with StandInServer(scripted("nope", "still nope", "[1]")) as server:
        result = make_simulator("llm", options(server)).simulate(REQUEST)
    assert result.answer == {"error": E.FAKE_RESPONSE_FAILED, "response": ""} and not result.cacheable


def test_llm_survives_an_endpoint_error():
    with StandInServer(lambda exchange: Reply(status=500, body="down")) as server:
        result = make_simulator("llm", options(server, attempts=2)).simulate(REQUEST)
    assert result.answer["error"] == E.FAKE_RESPONSE_FAILED and len(server.exchanges) == 2


def replies(*items):
    """A stand-in that answers each request with the next item: a completion's text, or a Reply as is."""
    queue = iter(items)

    def answer(exchange):
        item = next(queue)
        return item if isinstance(item, Reply) else completion(item)
    return answer


@pytest.mark.parametrize("name", ["llm", "mirrorapi"])
def test_a_transient_endpoint_fault_is_retried_without_spending_a_sample(name):
    good = '{"error": "", "response": {"temp": 3}}'
    script = [Reply(status=503, body="busy"), "not json", "still not json", good] if name == "llm" else \
        [Reply(status=503, body="busy"), "nothing useful", "nothing useful", good]
    with StandInServer(replies(*script)) as server:
        result = make_simulator(name, options(server)).simulate(REQUEST)
    assert result.answer["response"] in ({"temp": 3}, "{'temp': 3}") and result.cacheable
    assert len(server.exchanges) == 4  # the 503 was retried by the transport; three samples after it


@pytest.mark.parametrize("name", ["llm", "mirrorapi"])
def test_an_endpoint_fault_retrying_cannot_fix_is_asked_once(name, caplog):
    with StandInServer(lambda exchange: Reply(status=400, body={"detail": "bad model"})) as server:
        result = make_simulator(name, options(server)).simulate(REQUEST)
    assert result.answer["error"] == E.FAKE_RESPONSE_FAILED and not result.cacheable
    assert len(server.exchanges) == 1
    assert "http_4xx" in caplog.text  # the transport's fault name reaches the log


def test_mirrorapi_request_format(tmp_path):
    prompt = tmp_path / "sft_system.txt"
    prompt.write_text("SYSTEM PROMPT FROM A FILE")
    with StandInServer(scripted('{"error": "", "response": "sunny"}')) as server:
        result = make_simulator("mirrorapi", options(server, system_prompt_file=str(prompt))).simulate(REQUEST)
    assert result.answer == {"error": "", "response": "sunny"}
    sent = server.exchanges[0].json()
    assert sent["messages"][0]["content"] == "SYSTEM PROMPT FROM A FILE"
    assert (sent["temperature"], sent["max_tokens"], sent["seed"]) == (0.1, 2048, 42)
    user = sent["messages"][1]["content"]
    assert user.startswith("API doc:\n{'api_name': 'Now', 'api_description': 'Weather now.'")
    assert user.endswith("\n\nRequest:\n{'city': 'Oslo'}")  # toolbench_key is removed


def test_mirrorapi_without_prompt_file_uses_a_stand_in():
    with StandInServer(scripted('{"error": "", "response": "x"}')) as server:
        make_simulator("mirrorapi", options(server)).simulate(REQUEST)
    assert server.exchanges[0].json()["messages"][0]["content"] == STAND_IN_SYSTEM_PROMPT


def test_mirrorapi_loose_output_parsing():
    assert parse_answer('{"error": "", "response": "a"}') == {"error": "", "response": "a"}
    assert parse_answer('junk "error": "", "response": "cut off text') == {"error": "", "response": "cut off text"}
    assert parse_answer('{"error": "", "response": ""}') is None
    assert parse_answer("nothing useful") is None


def test_model_simulators_need_a_model_name():
    with pytest.raises(ValueError, match="model"):
        make_simulator("llm", SimulatorOptions())


def test_none_simulator_answers_an_uncached_error():
    result = make_simulator("none").simulate(REQUEST)
    assert "without a simulator" in result.answer["error"] and not result.cacheable
    assert json.dumps(result.answer)
