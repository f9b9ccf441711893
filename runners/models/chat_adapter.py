"""Any model backend as the judge's ChatClient (toolbench_adapter/evaluation/judging/chat.py): ``name``,
``supports_tools`` and ``chat(messages, *, tools, tool_choice, temperature, max_tokens) -> assistant dict``."""

from __future__ import annotations

from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.judging.chat import ChatError

from .base import ModelRequest, weights_of

DEFAULT_MAX_TOKENS = 1024


class BackendChatError(ChatError):
    """The backend gave up (after its own retries); the judge records it as a judge error (it catches
    ChatError)."""


def describe(backend) -> str:
    """A name for tables: "gpt-4o-mini @ http://host/v1" for endpoints, "hf:SmolLM2-135M-Instruct (local)"."""
    endpoint = getattr(backend, "endpoint", None)
    if endpoint is not None:
        return f"{endpoint.model} @ {endpoint.base_url}"
    label = getattr(backend, "model", None) or backend.name
    return f"{label} (local)" if backend.name == "hf" else str(label)


class BackendChatClient:
    def __init__(self, backend, name: str | None = None):
        if not getattr(backend, "accepts_messages", True):
            raise InputError(f"the {backend.name} backend takes text prompts, not chat messages", field="backend",
                             fix="use openai-chat for an endpoint, or hf for the local model")
        self.backend = backend
        self.name = name or describe(backend)
        # text-only backends (hf) get no tools: the judge then asks for JSON in the prompt instead
        self.supports_tools = bool(getattr(backend, "supports_tools", False))
        # a local model continues a reply we start (the hf backend honours extra["prefill"]); endpoints do not
        self.accepts_prefill = getattr(backend, "name", None) == "hf"

    def weights(self) -> str | None:
        """The weights this backend runs (base.weights_of: a local model's path)."""
        return weights_of(self.backend)

    def constraint_support(self, kind: str) -> str | None:
        """None when the backend can constrain a reply of this kind; else why not."""
        support = getattr(self.backend, "constraint_support", None)
        return support(kind) if support is not None else f"the {self.backend.name} backend cannot constrain"

    def chat(self, messages: list[dict], *, tools: list[dict] | None = None, tool_choice: dict | None = None,
             temperature: float | None = None, max_tokens: int | None = None, prefill: str | None = None,
             stop: list[str] | None = None, constraint: Any = None) -> dict:
        """``prefill`` (local models only: see accepts_prefill) starts the reply; it is part of the content.
        ``constraint`` (--judge-constrain): the reply's grammar, for a backend that can constrain (hf)."""
        use_tools = self.supports_tools and bool(tools)
        extra = {"tool_choice": tool_choice} if use_tools and tool_choice is not None else {}
        if constraint is not None:
            extra["constraint"] = constraint
        if prefill and self.accepts_prefill:
            extra["prefill"] = prefill
        request = ModelRequest(
            messages=messages,
            tools=tools if use_tools else None,
            max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
            temperature=0.0 if temperature is None else temperature,
            extra=extra,
            stop=list(stop or []),
        )
        completion = self.backend.complete(request)
        if completion.error:
            raise BackendChatError(completion.error)
        return completion.message()


# the hf judge: CHAT_CLIENTS finds it through the entry point toolbench_adapter.chat_clients (setup.cfg), so
# it exists whichever module was imported first
LOCAL_JUDGE_MAX_TOKENS = 96  # a verdict is a short JSON object; a small local model would ramble to 1000


def hf_chat_client(model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                   max_tokens: int = LOCAL_JUDGE_MAX_TOKENS, **_):
    """Judge with a local transformers model (default: SmolLM2-135M-Instruct); text only -> JSON mode."""
    from toolbench_adapter.evaluation.evaluations import PIPELINE_CHECK

    from .hf import HFBackend

    class CappedChatClient(BackendChatClient):
        def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, prefill=None,
                 stop=None, constraint=None):
            cap = min(max_tokens or self.cap, self.cap)
            return super().chat(messages, tools=tools, tool_choice=tool_choice, temperature=temperature,
                                max_tokens=cap, prefill=prefill, stop=stop, constraint=constraint)

    backend = HFBackend(model=model)
    backend.preflight()
    client = CappedChatClient(backend)
    client.cap = max_tokens
    client.model = backend.model  # the judge's identity (evaluations.py): which model judged
    if backend.source.converts_default:  # the offline default's judge: every table says what it is worth
        client.judge_note = PIPELINE_CHECK
    return client
