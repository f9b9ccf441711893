"""runners/serving/openai_server.py and `tba serve-model`: a real loopback server wrapping a backend, called by the
openai-* backends."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from runners.cli import main
from runners.models.base import Completion, ModelRequest
from runners.models.hf import HFBackend
from runners.models.openai_chat import OpenAIChatBackend
from runners.models.openai_completions import OpenAICompletionsBackend
from runners.serving.openai_server import LoopbackServer, build_app
from toolbench_adapter.errors import InputError


class ScriptedBackend:
    """A backend that answers from its input, so the server's translation can be checked exactly."""

    name = "scripted"
    model = "scripted:echo-1"

    def __init__(self):
        self.requests: list[ModelRequest] = []

    def preflight(self) -> None:
        pass

    def complete(self, request: ModelRequest) -> Completion:
        self.requests.append(request)
        if request.prompt == "fail":
            return Completion(error="scripted: broken on purpose")
        text = request.prompt if request.prompt is not None else request.messages[-1]["content"]
        calls = None
        if request.tools:
            calls = [{"id": "c0", "type": "function", "function": {"name": request.tools[0]["function"]["name"], "arguments": "{}"}}]
        return Completion(text=text[::-1], tool_calls=calls, prompt_tokens=len(text), completion_tokens=3,
                          finish_reason="length")


@pytest.fixture()
def served():
    backend = ScriptedBackend()
    with LoopbackServer(build_app(backend)) as server:
        yield backend, server


def test_models_lists_the_served_name(served):
    backend, server = served
    assert server.url.startswith("http://127.0.0.1:")
    data = requests.get(f"{server.url}/models", timeout=5).json()
    assert [m["id"] for m in data["data"]] == ["echo-1"]


def test_completions_round_trip_through_the_openai_completions_backend(served):
    backend, server = served
    client = OpenAICompletionsBackend(base_url=server.url, model="echo-1", retries=0)
    client.preflight()
    completion = client.complete(ModelRequest(prompt="abc", max_tokens=7, stop=["\nObservation:"]))
    assert completion.error is None
    assert completion.text == "cba"
    assert (completion.prompt_tokens, completion.completion_tokens, completion.finish_reason) == (3, 3, "length")
    [seen] = backend.requests
    assert (seen.prompt, seen.max_tokens, seen.stop) == ("abc", 7, ["</s>", "\nObservation:"])


def test_chat_round_trip_with_tools(served):
    backend, server = served
    client = OpenAIChatBackend(base_url=server.url, model="echo-1", retries=0)
    tools = [{"type": "function", "function": {"name": "Finish", "parameters": {}}}]
    completion = client.complete(ModelRequest(messages=[{"role": "user", "content": "hello"}], tools=tools))
    assert completion.text == "olleh"
    assert completion.tool_calls[0]["function"]["name"] == "Finish"
    assert completion.finish_reason == "tool_calls"
    plain = client.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}]))
    assert plain.tool_calls is None and plain.finish_reason == "length"


def test_wrong_model_and_bad_bodies_are_client_errors(served):
    _, server = served
    with pytest.raises(InputError, match="served ids: echo-1"):
        OpenAICompletionsBackend(base_url=server.url, model="echo-2").preflight()
    wrong = requests.post(f"{server.url}/completions", json={"model": "echo-2", "prompt": "x"}, timeout=5)
    assert wrong.status_code == 404 and "echo-2" in wrong.json()["error"]["message"]
    assert requests.post(f"{server.url}/completions", json={"prompt": 3}, timeout=5).status_code == 400
    assert requests.post(f"{server.url}/chat/completions", json={"messages": []}, timeout=5).status_code == 400
    assert requests.post(f"{server.url}/completions", data="{", timeout=5).status_code == 400


def test_a_backend_error_becomes_a_500_and_an_error_completion(served):
    _, server = served
    client = OpenAICompletionsBackend(base_url=server.url, model="echo-1", retries=1, backoff=0.01)
    completion = client.complete(ModelRequest(prompt="fail"))
    assert "HTTP 500" in completion.error and "broken on purpose" in completion.error


@pytest.mark.slow
def test_local_model_end_to_end_through_the_server():
    hf = HFBackend()
    with LoopbackServer(build_app(hf)) as server:
        client = OpenAICompletionsBackend(base_url=server.url, model="SmolLM2-135M-Instruct", retries=0)
        client.preflight()
        completion = client.complete(ModelRequest(prompt="User: Say hello.\nAssistant:\n", max_tokens=8))
        chat = OpenAIChatBackend(base_url=server.url, model="SmolLM2-135M-Instruct", retries=0)
        reply = chat.complete(ModelRequest(messages=[{"role": "user", "content": "Say hello."}], max_tokens=8))
        primed = chat.complete(ModelRequest(messages=[{"role": "user", "content": "Say hello."}], max_tokens=8,
                                            extra={"prefill": "Thought: "}))
    direct = hf.complete(ModelRequest(prompt="User: Say hello.\nAssistant:\n", max_tokens=8, stop=["</s>"]))
    direct_primed = hf.complete(ModelRequest(messages=[{"role": "user", "content": "Say hello."}], max_tokens=8,
                                             extra={"prefill": "Thought: "}))
    # the prefill travels as a final assistant message to continue (vLLM's API) and comes back in front once
    assert primed.error is None and primed.text == direct_primed.text and primed.text.startswith("Thought: ")
    assert not primed.text.startswith("Thought: Thought: ")
    assert completion.error is None and completion.text == direct.text
    assert completion.prompt_tokens == direct.prompt_tokens and completion.completion_tokens == direct.completion_tokens
    assert reply.error is None and reply.text and 1 <= reply.completion_tokens <= 8


def test_serve_model_help_and_bad_model_exit_status(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["serve-model", "--help"])
    assert caught.value.code == 0
    assert "/v1/chat/completions" in capsys.readouterr().out
    # a bad model fails before any port is opened, with status 2 and the fix
    assert main(["serve-model", "--model", "/nonexistent/model", "--port", "0"]) == 2
    assert "not a local model folder" in capsys.readouterr().err


def test_serve_model_command_serves_until_stopped(tmp_path):
    """The real command in a subprocess (replay backend: no model to load), stopped by the test."""
    (tmp_path / "G1").mkdir()
    (tmp_path / "G1" / "1_CoT@1.json").write_text('{"trys": []}')
    process = subprocess.Popen([sys.executable, "-m", "runners.cli", "serve-model", "--backend", "replay",
                                "--model", str(tmp_path), "--port", "0", "--served-name", "recorded"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "at http://127.0.0.1:" in line, process.stderr.read() if process.poll() is not None else line
        url = line.split(" at ")[1].split()[0]
        assert requests.get(f"{url}/models", timeout=5).json()["data"][0]["id"] == "recorded"
    finally:
        process.terminate()
        process.wait(timeout=10)
