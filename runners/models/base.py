"""The model-backend contract.

A backend gets a ModelRequest (a rendered text prompt for completion-style dialects, or chat messages
plus native tools for chat dialects) and returns a Completion. Backends retry 429/5xx themselves and
never raise for a model-side failure after retries: they return a Completion with ``error`` set, and
``error_kind`` when the failure is the infrastructure's (the run then records the query as an infrastructure
failure and writes no answer file, so a rerun redoes it) rather than the model's own, or ``CONTEXT_LENGTH``
when the request is longer than the model takes (the chain ends there; the query finishes).

A backend may declare ``natural_dialect``: the dialect whose parser reads what it answers (scripted: native
tool calls, "openai-tools"). The runner uses it when --dialect is not given and refuses a parser that cannot
read those outputs.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolbench_adapter.errors import OptionError
from toolbench_adapter.net.limits import (
    ATTEMPTS_WHY,
    MAX_ATTEMPTS,
    MAX_RATE_PER_S,
    MAX_SECONDS,
    MAX_WAIT_S,
    RATE_WHY,
    SECONDS_WHY,
    WAIT_WHY,
    number_problem,
)
from toolbench_adapter.registry import Registry


@dataclass
class ModelRequest:
    prompt: str | None = None  # text prompt (openai-completions, hf)
    messages: list[dict] | None = None  # chat messages (openai-chat)
    tools: list[dict] | None = None  # native tools, {"type": "function", "function": {...}}
    stop: list[str] = field(default_factory=list)
    max_tokens: int = 1024
    temperature: float = 0.0
    # a trial's seed (tba run --trials: trial i sends seed + i), for endpoints that take one; None: none sent (a run
    # without trials sends the requests it always sent)
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # backend-specific extras (e.g. truncate_prompt_tokens)
    # replay backend: which recorded turn to return (group, query id, position in the trajectory)
    key: dict[str, Any] = field(default_factory=dict)


@dataclass
class Completion:
    text: str | None = None  # generated text / message content
    tool_calls: list[dict] | None = None  # native calls: [{"id", "type": "function", "function": {"name", "arguments"}}]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str | None = None
    error: str | None = None  # set when the backend gave up after retries
    # (runners/failures.py) MODEL_ENDPOINT or REPLAY_GAP: an infrastructure failure, not the model's;
    # CONTEXT_LENGTH: the model's limit
    error_kind: str | None = None
    raw: Any = None

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def message(self) -> dict:
        """The completion as an OpenAI assistant message dict."""
        msg: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        return msg


def weights_of(backend) -> str | None:
    """What identifies the weights a backend runs: the local model's file or folder (hf), else the upstream
    model at its endpoint (a relay); None when nothing is known."""
    source = getattr(backend, "source", None)
    if source is not None and getattr(source, "folder", None) is not None:
        path = source.folder / source.gguf_file if source.gguf_file else source.folder
        return str(path.expanduser().resolve())
    endpoint = getattr(backend, "endpoint", None)
    if endpoint is not None and getattr(endpoint, "model", None):
        # what the server says it runs (GET /models "root": vLLM, tba serve-model), read by the preflight
        root = (getattr(endpoint, "served_entry", lambda: None)() or {}).get("root")
        return str(root) if root else f"{endpoint.model} @ {endpoint.base_url}"
    return None


def natural_dialect(backend: object) -> str | None:
    """The dialect a backend declares it fits (attribute, property or method), or None."""
    value = getattr(backend, "natural_dialect", None)
    if callable(value):
        value = value()
    return value or None


def takes_seed(backend: object) -> bool:
    """Whether a backend's completions can differ with the request's seed (``takes_seed``: the OpenAI backends send
    it; the scripted agent with an answer rate draws from it). One that does not, and decodes greedily or is a
    script, answers every trial alike: its trials measure the judge only."""
    value = getattr(backend, "takes_seed", False)
    return bool(value() if callable(value) else value)


class Backend(Protocol):
    name: str

    def preflight(self) -> None:
        """Fail fast (raise InputError with a clear message) when the endpoint or model is unusable."""

    def complete(self, request: ModelRequest) -> Completion: ...


# name -> Backend class or "module:attr"; entry point group toolbench_adapter.backends
BACKENDS: Registry[type] = Registry("backends")


_TOKENS = {"le": 1_000_000, "why": "more tokens than any served model's context holds", "ge": 1}
# each numeric backend option's range and the top's reason (toolbench_adapter/net/limits.py: the request ones),
# checked where the backend reads it, so a config file's option and --backend-option alike end at exit 2
OPTION_RANGES: dict[str, dict[str, Any]] = {
    "timeout": {"gt": 0, "le": MAX_SECONDS, "why": SECONDS_WHY},
    "retries": {"ge": 0, "le": MAX_ATTEMPTS, "why": ATTEMPTS_WHY},
    "backoff": {"ge": 0, "le": MAX_WAIT_S, "why": WAIT_WHY},
    "backoff_max": {"ge": 0, "le": MAX_WAIT_S, "why": WAIT_WHY},
    "rate_per_s": {"gt": 0, "le": MAX_RATE_PER_S, "why": RATE_WHY},
    "delay_s": {"ge": 0, "le": MAX_WAIT_S, "why": "a scripted reply's delay: past an hour it is a hang"},
    "threads": {"ge": 1, "le": 1_024, "why": "torch threads for one local model: past 1,024 no machine has the cores"},
    "answer_rate": {"ge": 0, "le": 1, "why": "a probability"},
    "prompt_token_limit": _TOKENS, "truncate_prompt_tokens": _TOKENS, "context_tokens": _TOKENS,
}
OPTION_EXAMPLES = {"timeout": 600, "retries": 3, "backoff": 1, "backoff_max": 30, "rate_per_s": 6, "delay_s": 0.1,
                   "threads": 4, "prompt_token_limit": 4096, "truncate_prompt_tokens": 7168, "context_tokens": 8192}


def backend_option(name: str, value: Any, kind: type = float) -> Any:
    """A constructor option as a number within its range (OPTION_RANGES): CLI options (--backend-option
    KEY=VALUE) arrive as strings. OptionError (exit 2) naming the option, its range and why otherwise."""
    if value is None:
        return value
    if not isinstance(value, kind) or isinstance(value, bool):
        try:
            value = kind(value)
        except (TypeError, ValueError, OverflowError) as exc:  # an OptionError: a caller that read a config file names it
            raise OptionError(f"backend option {name}={value!r} is not a{'n integer' if kind is int else ' number'}",
                              setting="backend_options", key=name, example=OPTION_EXAMPLES.get(name, 3)) from exc
    bounds = OPTION_RANGES.get(name)
    problem = number_problem(name, value, whole=kind is int, **bounds) if bounds else None
    if problem is not None:
        raise OptionError(f"backend option {problem}", setting="backend_options", key=name,
                          example=OPTION_EXAMPLES.get(name, 3))
    return value


def reject_unknown_options(backend_class: type, unknown: dict) -> None:
    """Unknown keyword options are an input error that names the known ones, not a TypeError."""
    if unknown:
        params = inspect.signature(backend_class.__init__).parameters.values()
        known = [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY]
        raise OptionError(f"the {backend_class.name} backend has no option {', '.join(map(repr, sorted(unknown)))}",
                          setting="backend_options", key=sorted(unknown)[0], known=known)
