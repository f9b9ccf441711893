"""Before a simulator that asks a chat model (llm, mirrorapi) answers any miss: its endpoint answers GET /models
and lists the model whole, in one bounded request (as the judge's preflight checks the judge), or the command
stops with exit 2 naming the flag and the fix: a dead simulator endpoint costs nothing, not one failed answer
per cache miss. What the check found is the evidence the comparability rule reads (evaluation/comparability.py):
the model id whole, the endpoint's host, whether it listed the model, and whose prompt the simulator sends.

tba run checks it before any query (runners/execution/preflight.py), tba eval and tba sweep with their checks,
tba serve before it binds (its /health then says it), tba doctor as its simulator piece.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import requests

from toolbench_adapter.evaluation.comparability import PROMPT_FILE, PROMPT_OWN, PROMPT_STAND_IN, endpoint_host
from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.net.transport import FaultKind, classify_exception, short

from ...errors import InputError
from .base import DEFAULT_API_KEY_ENV, MODEL_SIMULATORS, SimulatorOptions

CHECK_TIMEOUT_S = 10.0  # the whole GET /models (net/deadline.py), however slowly the endpoint answers
LEADERBOARD_HINT = "the leaderboard's simulator: --llm-model gpt-4-turbo --llm-base-url https://api.openai.com/v1"


@dataclass(frozen=True)
class SimulatorEndpoint:
    """What was checked of the endpoint a simulator asks."""

    simulator: str  # llm or mirrorapi
    model: str  # the id sent and listed, whole
    base_url: str
    listed: bool  # its GET /models listed the model
    prompt: str  # PROMPT_OWN, PROMPT_FILE or PROMPT_STAND_IN

    @property
    def host(self) -> str:
        return endpoint_host(self.base_url)

    def facts(self) -> dict:
        """As a run records it (setup_facts' tool_responses.simulator_endpoints) and tba serve's /health says it."""
        return {"simulator": self.simulator, "model": self.model, "host": self.host, "listed": self.listed,
                "prompt": self.prompt}


def prompt_of(simulator: str, options: SimulatorOptions) -> str:
    if simulator == "mirrorapi":
        return PROMPT_FILE if options.system_prompt_file else PROMPT_STAND_IN
    return PROMPT_OWN


def _where(simulator: str, url: str) -> str:
    return f"the {simulator} simulator's endpoint {url}"


def served_ids(simulator: str, url: str, api_key: str, timeout_s: float, key_env: str) -> list[str]:
    """The ids GET {url}/models lists; InputError when it cannot be reached, refuses the key or lists nothing."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}  # as the simulator's requests send it
    target = f"{url}/models"
    try:
        with EnvCachedSession() as session:
            reply = session.get(target, headers=headers, timeout=timeout_s)
    except requests.RequestException as exc:
        fault = classify_exception(exc)
        why = (f"no answer within {timeout_s:g} s" if fault is FaultKind.TIMEOUT else
               "connection refused, reset or host unknown" if fault is FaultKind.CONNECTION_ERROR else short(str(exc)))
        raise InputError(f"{_where(simulator, url)} cannot be reached (GET {target}: {why})", field="--llm-base-url",
                         fix=f"start it, or pass --llm-base-url with the API root of a running OpenAI-compatible "
                         f"server ({LEADERBOARD_HINT})") from None
    if reply.status_code in (401, 403):
        raise InputError(f"{_where(simulator, url)} refused the key in ${key_env} (HTTP {reply.status_code})",
                         field="--llm-api-key-env",
                         fix=f"set ${key_env} to the endpoint's key, or pass --llm-api-key-env with the variable "
                         "that holds it")
    try:
        ids = [str(entry["id"]) for entry in reply.json()["data"]] if reply.status_code == 200 else None
    except (ValueError, KeyError, TypeError):
        ids = None
    if ids is None:
        raise InputError(f"{_where(simulator, url)} gives no model list (GET {target}: HTTP "
                         f"{reply.status_code}), so which model answers cannot be checked", field="--llm-base-url",
                         fix="pass --llm-base-url with the API root of an OpenAI-compatible server, ending in /v1 "
                         "(it lists its models at GET /models)")
    return ids


def check_endpoint(simulator: str, options: SimulatorOptions, *, key_env: str | None = None,
                   timeout_s: float | None = None) -> SimulatorEndpoint | None:
    """The endpoint ``simulator`` asks, checked (one GET /models); None for a simulator that asks no model.
    InputError (exit 2) naming the flag: no model named, a prompt file missing, the endpoint unreachable, the key
    refused, no model list, the model not listed."""
    if simulator not in MODEL_SIMULATORS:
        return None
    if not options.model:
        raise InputError(f"the {simulator} simulator asks a model: --llm-model is not given", field="--llm-model",
                         fix=f"pass --llm-model NAME ({LEADERBOARD_HINT})")
    if options.system_prompt_file and not os.path.isfile(options.system_prompt_file):
        raise InputError("MirrorAPI's system prompt file not found", path=options.system_prompt_file,
                         field="--mirror-system-prompt", fix="save upstream's SFT_SYSTEM text to a file and pass its path")
    url = options.base_url.rstrip("/")
    ids = served_ids(simulator, url, options.api_key, timeout_s or CHECK_TIMEOUT_S, key_env or DEFAULT_API_KEY_ENV)
    if options.model not in ids:  # whole: an org prefix or another case is another id
        raise InputError(f"{_where(simulator, url)} does not serve {options.model!r} (GET /models lists: "
                         f"{', '.join(ids[:10]) or 'none'}{' ...' if len(ids) > 10 else ''})", field="--llm-model",
                         fix=f"pass --llm-model with an id it lists (e.g. {ids[0]})" if ids else
                         "load the model into that server, or point --llm-base-url at one that serves it")
    return SimulatorEndpoint(simulator, options.model, url, True, prompt_of(simulator, options))
