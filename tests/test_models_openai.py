"""openai-completions and openai-chat against a real loopback stand-in server."""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from runners.models import BACKENDS
from runners.models.base import ModelRequest
from runners.models.chat_adapter import BackendChatClient, BackendChatError
from runners.models.openai_chat import OpenAIChatBackend
from runners.models.openai_completions import OpenAICompletionsBackend
from runners.serving.openai_server import bind_socket
from tests.openai_standin import OpenAIStandin, Reply
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.judging.chat import ChatError
from toolbench_adapter.protocol.react import TOO_LONG_CONTENT

FAST = {"backoff": 0.01, "backoff_max": 0.05}  # retries without real waiting


def completions_backend(standin: OpenAIStandin, **options) -> OpenAICompletionsBackend:
    return OpenAICompletionsBackend(base_url=standin.url, model=standin.model, **{**FAST, **options})


def chat_backend(standin: OpenAIStandin, **options) -> OpenAIChatBackend:
    return OpenAIChatBackend(base_url=standin.url, model=standin.model, **{**FAST, **options})


def test_registry_names_resolve_to_the_backend_classes():
    assert BACKENDS.get("openai-completions") is OpenAICompletionsBackend
    assert BACKENDS.get("openai-chat") is OpenAIChatBackend


def test_completions_body_carries_the_upstream_toolllama_settings():
    reply = Reply(text="Thought: search\nAction: f\nAction Input: {}", finish_reason="stop",
                  usage={"prompt_tokens": 120, "completion_tokens": 9, "total_tokens": 129})
    with OpenAIStandin(completions=[reply]) as standin:
        completion = completions_backend(standin).complete(
            ModelRequest(prompt="System: s\nUser: q\nAssistant:\n", stop=["\nObservation:"]))
        [body] = standin.bodies("completions")
    assert body == {
        "model": "standin-model",
        "prompt": "System: s\nUser: q\nAssistant:\n",
        "temperature": 0.0,
        "max_tokens": 1024,
        "stop": ["</s>", "\nObservation:"],
        "echo": False,
        "truncate_prompt_tokens": 7168,
    }
    assert completion.error is None
    assert completion.text == reply.text
    assert completion.tool_calls is None
    assert (completion.prompt_tokens, completion.completion_tokens) == (120, 9)
    assert completion.finish_reason == "stop"
    assert completion.latency_s > 0


def test_completions_prefill_goes_into_the_prompt_and_back_into_the_text():
    with OpenAIStandin(completions=["I will call f.\nAction: f"]) as standin:
        completion = completions_backend(standin).complete(
            ModelRequest(prompt="Assistant:\n", extra={"prefill": "Thought: "}, stop=["</s>"]))
        [body] = standin.bodies("completions")
    assert body["prompt"] == "Assistant:\nThought: "
    assert body["stop"] == ["</s>"]  # the request's stop is not repeated
    assert completion.text == "Thought: I will call f.\nAction: f"


@pytest.mark.parametrize("total,forced", [(8191, False), (8192, True), (9000, True)])
def test_too_long_response_is_replaced_by_a_forced_give_up(total, forced):
    usage = {"prompt_tokens": total - 10, "completion_tokens": 10, "total_tokens": total}
    with OpenAIStandin(completions=[Reply(text="Thought: long", usage=usage)]) as standin:
        completion = completions_backend(standin).complete(ModelRequest(prompt="p"))
    if not forced:
        assert completion.text == "Thought: long" and completion.tool_calls is None
        return
    assert completion.text == TOO_LONG_CONTENT + "Thought: long"
    assert completion.text.startswith("The response is too long, please try again.\nOrignal response: ")
    [call] = completion.tool_calls
    assert call["function"]["name"] == "Finish"
    assert json.loads(call["function"]["arguments"]) == {"return_type": "give_up_and_restart"}


def test_forced_give_up_can_be_switched_off_and_truncation_left_out():
    usage = {"prompt_tokens": 8000, "completion_tokens": 500, "total_tokens": 8500}
    with OpenAIStandin(completions=[Reply(text="x", usage=usage)]) as standin:
        backend = completions_backend(standin, force_give_up_when_too_long=False, truncate_prompt_tokens=None)
        completion = backend.complete(ModelRequest(prompt="p"))
        [body] = standin.bodies("completions")
    assert completion.text == "x" and completion.tool_calls is None
    assert "truncate_prompt_tokens" not in body


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_on_429_and_5xx_then_succeeds(status):
    with OpenAIStandin(completions=["fine"]) as standin:
        standin.fail_next(2, status)
        completion = completions_backend(standin, retries=3).complete(ModelRequest(prompt="p"))
        assert standin.count("completions") == 3
    assert completion.error is None and completion.text == "fine"


def test_error_completion_after_retries_run_out():
    with OpenAIStandin() as standin:
        standin.fail_next(10, 500)
        completion = completions_backend(standin, retries=2).complete(ModelRequest(prompt="p"))
        assert standin.count("completions") == 3  # first try + 2 retries, then it gives up
    assert completion.text is None
    assert "HTTP 500" in completion.error and "3 attempts" in completion.error
    assert completion.error.startswith("openai-completions:")


def test_client_errors_are_not_retried():
    with OpenAIStandin() as standin:
        standin.fail_next(1, 400)
        completion = chat_backend(standin, retries=3).complete(ModelRequest(messages=[{"role": "user", "content": "x"}]))
        assert standin.count() == 1
    assert "HTTP 400" in completion.error


def test_a_hanging_server_times_out_into_an_error_completion():
    with OpenAIStandin(completions=["late"]) as standin:
        standin.hang_next(5, seconds=5)
        completion = completions_backend(standin, timeout=0.3, retries=1).complete(ModelRequest(prompt="p"))
        assert standin.count("completions") == 2
    assert "timed out" in completion.error


def test_preflight_names_the_refused_url_and_the_fix():
    sock = bind_socket()  # a port that was free a moment ago and has nobody listening
    port = sock.getsockname()[1]
    sock.close()
    backend = OpenAICompletionsBackend(base_url=f"http://127.0.0.1:{port}/v1", model="m", **FAST)
    with pytest.raises(InputError) as caught:
        backend.preflight()
    message = str(caught.value)
    assert f"http://127.0.0.1:{port}/v1" in message
    assert "connection refused" in message
    assert "fix:" in message and "serve-model" in message


def test_preflight_rejects_a_wrong_model_name_and_lists_the_served_ids():
    with OpenAIStandin(models=("qwen-7b", "toolllama-2")) as standin:
        backend = OpenAIChatBackend(base_url=standin.url, model="toolama-2", **FAST)
        with pytest.raises(InputError) as caught:
            backend.preflight()
    message = str(caught.value)
    assert "'toolama-2' is not served" in message
    assert "qwen-7b, toolllama-2" in message
    assert caught.value.field == "model"


def test_preflight_adopts_the_only_served_model_when_none_is_named():
    with OpenAIStandin(models=("only-one",)) as standin:
        backend = OpenAICompletionsBackend(base_url=standin.url, **FAST)
        backend.preflight()
        backend.complete(ModelRequest(prompt="p"))
        [body] = standin.bodies("completions")
    assert backend.model == "only-one" and body["model"] == "only-one"


def test_preflight_points_at_a_base_url_without_v1():
    with OpenAIStandin() as standin:
        backend = OpenAIChatBackend(base_url=standin.url.removesuffix("/v1"), model=standin.model, **FAST)
        with pytest.raises(InputError, match="ending in /v1"):
            backend.preflight()


def test_chat_drops_invalid_messages_and_function_call_keys_from_copies():
    messages = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"},
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "name": "f", "content": "{}", "tool_call_id": "c1"},
        {"role": "user", "content": "This is not the first time you try this task", "valid": False},
    ]
    before = copy.deepcopy(messages)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    calls = [{"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
             {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]
    reply = Reply(text="two calls", tool_calls=calls, finish_reason="tool_calls",
                  usage={"prompt_tokens": 50, "completion_tokens": 7, "total_tokens": 57})
    with OpenAIStandin(chat=[reply]) as standin:
        completion = chat_backend(standin).complete(ModelRequest(messages=messages, tools=tools))
        [body] = standin.bodies("chat/completions")
    assert messages == before  # the caller's history is untouched
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "tool"]
    assert all("function_call" not in m and "valid" not in m for m in body["messages"])
    assert body["messages"][2]["tool_calls"] == messages[2]["tool_calls"]
    assert body["tools"] == tools and "tool_choice" not in body
    assert body["max_tokens"] == 1024
    assert completion.text == "two calls"
    assert completion.tool_calls == calls  # parallel calls come back as they were sent
    assert (completion.prompt_tokens, completion.completion_tokens, completion.finish_reason) == (50, 7, "tool_calls")


def test_chat_without_tools_is_plain_chat():
    with OpenAIStandin(chat=["Thought: hi"]) as standin:
        completion = chat_backend(standin).complete(
            ModelRequest(messages=[{"role": "user", "content": "q"}], stop=["\nObservation:"]))
        [body] = standin.bodies("chat/completions")
    assert "tools" not in body and body["stop"] == ["\nObservation:"]
    assert completion.text == "Thought: hi" and completion.tool_calls is None


def test_chat_upstream_mode_sends_no_temperature():
    with OpenAIStandin() as standin:
        chat_backend(standin, send_temperature=False).complete(ModelRequest(messages=[{"role": "user", "content": "q"}]))
        [body] = standin.bodies("chat/completions")
    assert "temperature" not in body


def test_backends_are_safe_to_share_between_threads():
    with OpenAIStandin(respond=lambda endpoint, body: body["prompt"].upper()) as standin:
        backend = completions_backend(standin)
        prompts = [f"prompt {i}" for i in range(40)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            completions = list(pool.map(lambda p: backend.complete(ModelRequest(prompt=p)), prompts))
        assert standin.count("completions") == 40
    assert [c.text for c in completions] == [p.upper() for p in prompts]


def test_chat_client_adapter_forwards_tools_and_tool_choice():
    verdict = [{"id": "v", "type": "function", "function": {"name": "check_answer_status", "arguments": '{"answer_status": "Solved"}'}}]
    with OpenAIStandin(chat=[Reply(text=None, tool_calls=verdict)]) as standin:
        client = BackendChatClient(chat_backend(standin))
        tools = [{"type": "function", "function": {"name": "check_answer_status", "parameters": {}}}]
        choice = {"type": "function", "function": {"name": "check_answer_status"}}
        message = client.chat([{"role": "user", "content": "judge"}], tools=tools, tool_choice=choice,
                              temperature=0.2, max_tokens=100)
        [body] = standin.bodies("chat/completions")
    assert client.supports_tools is True
    assert client.name == f"standin-model @ {standin.url}"
    assert body["tool_choice"] == choice and body["temperature"] == 0.2 and body["max_tokens"] == 100
    assert message == {"role": "assistant", "content": None, "tool_calls": verdict}


def test_chat_client_adapter_raises_when_the_backend_gives_up():
    with OpenAIStandin() as standin:
        standin.fail_next(5, 503)
        client = BackendChatClient(chat_backend(standin, retries=1))
        with pytest.raises(BackendChatError, match="HTTP 503"):
            client.chat([{"role": "user", "content": "judge"}])
    assert issubclass(BackendChatError, ChatError)  # what the judges catch: a judge error label, not a crash


def test_chat_client_adapter_refuses_a_prompt_only_backend():
    with pytest.raises(InputError, match="not chat messages"):
        BackendChatClient(OpenAICompletionsBackend(model="m"))


def test_cli_style_string_options_are_coerced_and_unknown_ones_named():
    backend = OpenAICompletionsBackend(model="m", retries="5", timeout="2.5", truncate_prompt_tokens="none",
                                       context_tokens="4096", stop="</s>")
    assert (backend.endpoint.retries, backend.endpoint.timeout) == (5, 2.5)
    assert backend.truncate_prompt_tokens is None and backend.context_tokens == 4096 and backend.stop == ("</s>",)
    with pytest.raises(InputError, match="retries='many' is not an integer"):
        OpenAIChatBackend(model="m", retries="many")
    with pytest.raises(InputError, match="retries must be at least 0"):
        OpenAIChatBackend(model="m", retries="-1")
    with pytest.raises(InputError) as caught:
        OpenAIChatBackend(model="m", temprature=0.5)
    assert "no option 'temprature'" in str(caught.value) and "send_temperature" in str(caught.value)


def test_endpoint_rate_limit_is_shared_by_threads_and_backends():
    """rate_per_s paces every request to one endpoint, whichever thread or backend sends it."""
    import threading
    import time

    from runners.models.base import ModelRequest

    with OpenAIStandin(completions=["x"] * 20, chat=["y"] * 20) as standin:
        completions = completions_backend(standin, rate_per_s=20)
        chat = chat_backend(standin, rate_per_s=20)  # same URL and rate: the same limiter
        assert completions.endpoint.limiter is chat.endpoint.limiter
        started = time.monotonic()
        threads = [threading.Thread(target=backend.complete, args=(request,))
                   for backend, request in [(completions, ModelRequest(prompt="p"))] * 5 +
                   [(chat, ModelRequest(messages=[{"role": "user", "content": "m"}]))] * 5]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        assert standin.count() == 10
        # 10 requests at 20/s with a burst of 1 need at least 9 intervals of 50 ms, however they interleave
        assert elapsed >= 0.45


def test_chat_prefill_continues_a_final_assistant_message():
    """vLLM/SGLang: the prefill goes out as a final assistant message to continue, and comes back in front."""
    from runners.models.base import ModelRequest

    with OpenAIStandin(chat=["I should search.\nAction: f"]) as standin:
        backend = chat_backend(standin)
        completion = backend.complete(ModelRequest(messages=[{"role": "user", "content": "q"}],
                                                   extra={"prefill": "Thought: "}))
        (body,) = standin.bodies("chat/completions")
    assert body["messages"][-1] == {"role": "assistant", "content": "Thought: "}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert completion.text == "Thought: I should search.\nAction: f"
    with OpenAIStandin(chat=["plain"]) as standin:
        chat_backend(standin).complete(ModelRequest(messages=[{"role": "user", "content": "q"}]))
        (body,) = standin.bodies("chat/completions")
    assert "continue_final_message" not in body and body["messages"][-1]["role"] == "user"


def test_judge_client_prefill_only_when_the_endpoint_accepts_it():
    from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient

    with OpenAIStandin(chat=['Solved", "reason": "ok"}', "plain"]) as standin:
        client = OpenAIChatClient(standin.url, standin.model, accepts_prefill=True, retries=1)
        reply = client.chat([{"role": "user", "content": "judge"}], prefill='{"answer_status": "')
        plain = OpenAIChatClient(standin.url, standin.model, retries=1)  # OpenAI proper: no such fields
        plain.chat([{"role": "user", "content": "judge"}], prefill='{"answer_status": "')
        first, second = standin.bodies("chat/completions")
    assert reply["content"] == '{"answer_status": "Solved", "reason": "ok"}'
    assert first["continue_final_message"] is True and first["messages"][-1]["role"] == "assistant"
    assert "continue_final_message" not in second and second["messages"][-1]["role"] == "user"
