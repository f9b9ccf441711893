"""The simulator contract and registry: what answers a call the cache does not hold."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...registry import Registry
from ..catalog import ApiDoc
from ..names import ApiKey

SIMULATORS: Registry = Registry("simulators")
MODEL_SIMULATORS = ("llm", "mirrorapi")  # the simulators that ask a chat model: SimulatorOptions' endpoint
DEFAULT_BASE_URL = "http://127.0.0.1:12345/v1"  # upstream's MirrorAPI config (a local vLLM)
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"


@dataclass(frozen=True)
class SimulationRequest:
    key: ApiKey
    tool_input: Any  # the parsed tool input (normally a dict)
    cache_key: str  # str(tool_input), the cache key
    doc: ApiDoc | None  # None when the server has no documentation for this API
    examples: list[tuple[str, Any]] = field(default_factory=list)  # real cached (key, answer) pairs


@dataclass(frozen=True)
class SimulationResult:
    answer: dict
    cacheable: bool = True  # failures and "no simulator" answers are never stored


@dataclass(frozen=True)
class SimulatorOptions:
    """Settings for the model-backed simulators (llm, mirrorapi); the schema simulator needs none."""

    base_url: str = DEFAULT_BASE_URL
    model: str = ""
    api_key: str = "EMPTY"
    temperature: float | None = None  # None: the simulator's own default
    max_tokens: int | None = None
    attempts: int = 3
    timeout_s: float = 120.0
    system_prompt_file: str | None = None  # mirrorapi: upstream's SFT_SYSTEM text, supplied by the user
    json_mode: bool = True  # llm: ask for response_format json_object

    @classmethod
    def from_settings(cls, base_url: str | None, model: str | None, api_key_env: str | None,
                      temperature: float | None, system_prompt_file: str | None) -> SimulatorOptions:
        """The options of the --llm-* flags (tba serve, tba run's embedded server, tba doctor): None takes the
        default; the key is read from the environment variable named (none set: no key)."""
        key = os.environ.get(api_key_env or DEFAULT_API_KEY_ENV)
        return cls(base_url=base_url or DEFAULT_BASE_URL, model=model or "", api_key=key or cls.api_key,
                   temperature=temperature, system_prompt_file=system_prompt_file)


class Simulator(Protocol):
    name: str

    def simulate(self, request: SimulationRequest) -> SimulationResult: ...


def make_simulator(name: str, options: SimulatorOptions | None = None) -> Simulator:
    factory = SIMULATORS.get(name)
    return factory(options or SimulatorOptions())
