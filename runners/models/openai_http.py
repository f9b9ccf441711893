"""HTTP plumbing shared by the OpenAI-compatible backends: POSTs through the one HTTP layer
(toolbench_adapter/net/transport.py: one session per thread, capped exponential retries of the transient
faults, the shared rate limiter), and a preflight that checks the endpoint and the model name.

``base_url`` may name several endpoints serving the same model (e.g. vLLM data-parallel replicas): each
request goes to the one with the fewest in flight (transport.EndpointPool), and an endpoint that fails at
the transport level is cooled down while the others take its requests."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass

import requests

from toolbench_adapter.errors import InputError, OptionError
from toolbench_adapter.net.ratelimit import shared_limiter
from toolbench_adapter.net.transport import FaultKind, HttpResult, HttpTransport, RetryPolicy, short, url_list

from .base import backend_option

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
SERVE_HINT = "`tba serve-model --backend hf --port 8000` serves the local model at http://127.0.0.1:8000/v1"


class UnreachableEndpoint(InputError):
    """The endpoint did not answer GET /models at all (refused, unknown host, timeout)."""


class EndpointError(Exception):
    """The endpoint failed for good (after retries, or with a fault that retrying cannot fix).

    ``fault`` is the transport FaultKind of the last attempt (None for a reply of the wrong shape);
    ``status`` its HTTP status and ``attempts`` how many tries were made."""

    def __init__(self, message: str, *, fault: FaultKind | None = None, status: int | None = None,
                 attempts: int = 0):
        super().__init__(message)
        self.fault = fault
        self.status = status
        self.attempts = attempts

    @classmethod
    def from_result(cls, result: HttpResult) -> EndpointError:
        return cls(result.describe(), fault=result.fault, status=result.status, attempts=result.attempts)


class ContextLengthExceeded(EndpointError):
    """The endpoint refused the request as longer than the model's context: the model's limit, not a fault of
    the endpoint (the backend answers a Completion with error_kind CONTEXT_LENGTH)."""


# A request refused for its length, as servers word it (an HTTP 4xx, 400 in practice): vLLM's OpenAI server
# ("This model's maximum context length is 8192 tokens. However, you requested ...", or "'max_tokens' ... is too
# large: 1024. This model's maximum context length is ..."; its V1 engine "The decoder prompt (length 9000) is
# longer than the maximum model length of 8192"), OpenAI's API (code "context_length_exceeded", the message
# "This model's maximum context length is ..." or "Input tokens exceed the configured limit ..."), SGLang
# ("... is longer than the model's context length ...").
CONTEXT_LENGTH_WORDING = re.compile(
    r"context_length_exceeded|maximum context length|longer than the maximum model length"
    r"|longer than the model's context length|input tokens exceed the configured limit", re.IGNORECASE)


def is_context_length(result: HttpResult) -> bool:
    """A 4xx whose body says the request is longer than the model's context."""
    if result.status is None or not 400 <= result.status < 500:
        return False
    body = getattr(result, "error_data", None)  # the whole parsed error body, where the transport keeps it
    return any(CONTEXT_LENGTH_WORDING.search(text) for text in (result.text or "", json.dumps(body) if body else ""))


def malformed(url: str, what: str, data: object) -> EndpointError:
    """An HTTP 200 JSON reply that is not an OpenAI completion: named by endpoint and by what is wrong."""
    try:
        shown = json.dumps(data)
    except (TypeError, ValueError):
        shown = repr(data)
    return EndpointError(f"POST {url} answered a malformed reply: {what} (body: {short(shown)})")


@dataclass
class OpenAIEndpoint:
    """One OpenAI-compatible server, or several serving the same model. ``post`` retries and raises
    EndpointError when it gives up."""

    base_url: str | list[str] = DEFAULT_BASE_URL  # one URL, or a list: the endpoints of one pool
    model: str | None = None
    api_key: str | None = None
    timeout: float = 600.0
    retries: int = 3  # extra attempts after the first
    backoff: float = 1.0  # first wait in seconds; doubles each retry
    backoff_max: float = 30.0
    rate_per_s: float | None = None  # requests per second to this endpoint, shared by every thread

    def __post_init__(self) -> None:
        self.base_urls = [url.rstrip("/") for url in url_list(self.base_url)]
        if not self.base_urls:
            raise InputError("no model endpoint URL given", field="base_url",
                             fix="pass --base-url http://host:port/v1 (repeat it for several endpoints)")
        if len(set(self.base_urls)) != len(self.base_urls):
            raise InputError(f"a model endpoint is listed twice: {', '.join(self.base_urls)}", field="base_url",
                             fix="list each --base-url once")
        self.base_url = ", ".join(self.base_urls)  # one URL as before; several: a label for names and messages
        self.owners: dict[str, set[str]] = {}  # URL -> the owned_by of its GET /models entries (preflight)
        self.entries: dict[str, dict[str, dict]] = {}  # URL -> model id -> its GET /models entry (preflight)
        self.timeout = backend_option("timeout", self.timeout)
        self.retries = backend_option("retries", self.retries, int)
        self.backoff = backend_option("backoff", self.backoff)
        self.backoff_max = backend_option("backoff_max", self.backoff_max)
        self.rate_per_s = backend_option("rate_per_s", self.rate_per_s)
        # one limiter per URL in the process: two backends on one endpoint share its budget
        self.limiter = shared_limiter(self.base_urls[0], self.rate_per_s)
        if self.api_key is None:
            self.api_key = os.environ.get("OPENAI_API_KEY")
        if self.backoff > self.backoff_max:  # the first wait above the longest one: one of the two is a typo
            raise OptionError(f"backoff={self.backoff:g} is above backoff_max={self.backoff_max:g}",
                              setting="backend_options", key="backoff", example=min(self.backoff, self.backoff_max))
        policy = RetryPolicy(attempts=self.retries + 1, backoff_s=self.backoff, backoff_max_s=self.backoff_max)
        # connecting should take seconds even when generating takes minutes
        self.transport = HttpTransport.over(self.base_urls, lambda url: shared_limiter(url, self.rate_per_s),
                                            policy=policy, timeout=(min(self.timeout, 10.0), self.timeout),
                                            headers={"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})

    def _session(self) -> requests.Session:
        return self.transport.session()

    def post(self, path: str, body: dict) -> dict:
        return self.post_reply(path, body)[0]

    def post_reply(self, path: str, body: dict) -> tuple[dict, str]:
        """The reply (a JSON object) and the URL of the endpoint that gave it. Raises ContextLengthExceeded for a
        request refused as too long, EndpointError for anything else that failed or is not a JSON object."""
        result = self.transport.post_json(path, body)
        if not result.ok:
            if is_context_length(result):
                raise ContextLengthExceeded.from_result(result)
            raise EndpointError.from_result(result)
        if not isinstance(result.data, dict):
            raise malformed(result.url, "the body is not a JSON object", result.data)
        return result.data, result.url

    def pool_stats(self) -> list[dict]:
        """Requests served and failed per endpoint (for the run manifest)."""
        return self.transport.pool.stats()

    def served_models(self, base_url: str | None = None) -> list[str]:
        """GET /models of one endpoint (default: the first); raises InputError with the fix when it cannot be
        used (UnreachableEndpoint when it does not answer at all)."""
        base_url = base_url or self.base_urls[0]
        url = f"{base_url}/models"
        try:
            response = self._session().get(url, timeout=min(self.timeout, 10.0))
        except requests.ConnectionError as exc:
            raise UnreachableEndpoint(
                f"cannot reach the model endpoint {base_url} (connection refused or host unknown)",
                field="base_url",
                fix=f"start the model server first, or pass --base-url pointing at a running OpenAI-compatible "
                f"server ({SERVE_HINT})",
            ) from exc
        except requests.Timeout as exc:
            raise UnreachableEndpoint(f"the model endpoint {base_url} did not answer GET /models in time",
                                      field="base_url", fix="check that the server is up and not overloaded") from exc
        if response.status_code in (401, 403):
            raise InputError(f"the model endpoint {base_url} refused the API key (HTTP {response.status_code})",
                             field="api_key", fix="pass --api-key or set OPENAI_API_KEY")
        if response.status_code != 200:
            raise InputError(
                f"GET {url} answered HTTP {response.status_code}: {short(response.text)}",
                field="base_url",
                fix="base_url must be the OpenAI API root, ending in /v1 (e.g. http://127.0.0.1:8000/v1)",
            )
        try:
            entries = response.json().get("data", [])
            ids = [str(entry["id"]) for entry in entries]
            # who serves them ("vllm" on vLLM): which structured-output fields the endpoint takes (constrain.py)
            self.owners[base_url] = {str(entry["owned_by"]) for entry in entries if entry.get("owned_by")}
            self.entries[base_url] = {str(entry["id"]): entry for entry in entries if isinstance(entry, dict)}
            return ids
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"GET {url} did not return an OpenAI model list", field="base_url",
                             fix="point --base-url at an OpenAI-compatible server") from exc

    def served_entry(self) -> dict | None:
        """The GET /models entry of this model at the first endpoint that listed it (after preflight)."""
        for url in self.base_urls:
            entry = self.entries.get(url, {}).get(self.model or "")
            if entry is not None:
                return entry
        return None

    def served_generation(self) -> dict | None:
        """The generation limits the server lists for this model (tba serve-model: its config's ``max_tokens``
        and where they come from), or None."""
        generation = (self.served_entry() or {}).get("generation")
        if isinstance(generation, dict) and isinstance(generation.get("max_tokens"), int) \
                and not isinstance(generation["max_tokens"], bool) and generation["max_tokens"] > 0:
            return generation
        return None

    def preflight(self) -> None:
        """Check every endpoint and the model name before any query runs. With no model given, adopt the
        only served one. Of several endpoints, one that does not answer yet is named on stderr and kept in
        the pool (a replica still loading joins when it answers); none answering, a wrong key, a wrong path
        or a model one of them does not serve is refused."""
        served: dict[str, list[str]] = {}
        unreachable: list[UnreachableEndpoint] = []
        for url in self.base_urls:
            try:
                served[url] = self.served_models(url)
            except UnreachableEndpoint as exc:
                if len(self.base_urls) == 1:
                    raise
                unreachable.append(exc)
        if not served:
            first = unreachable[0]
            raise UnreachableEndpoint(f"none of the {len(self.base_urls)} model endpoints answers (first: "
                                      f"{first.problem})", field="base_url", fix=first.fix)
        for exc in unreachable:
            print(f"warning: {exc.problem}; its requests go to the other endpoints until it answers",
                  file=sys.stderr)
        if self.model is None:
            models = {model for ids in served.values() for model in ids}
            if len(models) == 1 and all(len(ids) == 1 for ids in served.values()):
                self.model = models.pop()
                return
            listing = "; ".join(f"{url}: {', '.join(ids) or '(none)'}" for url, ids in served.items())
            raise InputError(f"no model name given and the endpoints do not serve exactly one model ({listing})",
                             field="model", fix="pass --model with the served name")
        for url, ids in served.items():
            if self.model not in ids:
                raise InputError(
                    f"model {self.model!r} is not served at {url}; served ids: {', '.join(ids) or '(none)'}",
                    field="model",
                    fix=f"pass --model {ids[0]}" if ids else "load a model into the server",
                )


def read_usage(data: dict, url: str = "the endpoint") -> tuple[int, int, int]:
    """(prompt, completion, total) tokens from an OpenAI response; zeros when the server sends no usage."""
    usage = data.get("usage") or {}
    try:
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        total = int(usage.get("total_tokens") or prompt + completion)
    except (AttributeError, TypeError, ValueError):
        raise malformed(url, "usage is not token counts", data) from None
    return prompt, completion, total


def first_choice(data: dict, url: str = "the endpoint") -> dict:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed(url, "no choices (a non-empty list of objects)", data)
    return choices[0]


OPENAI_BACKENDS = ("openai-completions", "openai-chat")


def served_generation_of(base_url: str | list[str] | None, model: str | None, api_key: str | None = None) -> dict | None:
    """The generation limits a server lists for ``model`` (``tba serve-model``: its config's ``max_tokens``) and
    ``url``, the GET /models that said so; None when it lists none or cannot be asked (the run's preflight then
    says why). ``model`` None: the only model served."""
    try:
        endpoint = OpenAIEndpoint(base_url=base_url or DEFAULT_BASE_URL, model=model, api_key=api_key, timeout=10.0,
                                  retries=0)
        url = endpoint.base_urls[0]
        ids = endpoint.served_models(url)
    except InputError:
        return None
    if endpoint.model is None:
        if len(ids) != 1:
            return None
        endpoint.model = ids[0]
    generation = endpoint.served_generation()
    return {**generation, "url": f"{url}/models"} if generation else None

