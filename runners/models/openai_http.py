"""HTTP plumbing shared by the OpenAI-compatible backends: one session per thread, capped exponential
retries on 429/5xx/connection errors, and a preflight that checks the endpoint and the model name."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

import requests
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from toolbench_adapter.errors import InputError
from toolbench_adapter.server.ratelimit import shared_limiter

from .base import backend_option

DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
SERVE_HINT = "`tba serve-model --backend hf --port 8000` serves the local model at http://127.0.0.1:8000/v1"


class EndpointError(Exception):
    """The endpoint failed for good (after retries, or with a status that retrying cannot fix)."""


class _RetryableStatus(Exception):
    def __init__(self, status: int, body: str):
        super().__init__(f"HTTP {status}: {body}")
        self.status = status


def _retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def _short(text: str, limit: int = 300) -> str:
    text = text.strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class OpenAIEndpoint:
    """One OpenAI-compatible server. ``post`` retries and raises EndpointError when it gives up."""

    base_url: str = DEFAULT_BASE_URL
    model: str | None = None
    api_key: str | None = None
    timeout: float = 600.0
    retries: int = 3  # extra attempts after the first
    backoff: float = 1.0  # first wait in seconds; doubles each retry
    backoff_max: float = 30.0
    rate_per_s: float | None = None  # requests per second to this endpoint, shared by every thread
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        self.timeout = backend_option("timeout", self.timeout)
        self.retries = backend_option("retries", self.retries, int)
        self.backoff = backend_option("backoff", self.backoff)
        self.backoff_max = backend_option("backoff_max", self.backoff_max)
        self.rate_per_s = backend_option("rate_per_s", self.rate_per_s)
        # one limiter per URL in the process: two backends on one endpoint share its budget
        self.limiter = shared_limiter(self.base_url, self.rate_per_s)
        if self.api_key is None:
            self.api_key = os.environ.get("OPENAI_API_KEY")

    def _session(self) -> requests.Session:
        # requests.Session is not guaranteed thread-safe: each worker thread gets its own
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            if self.api_key:
                session.headers["Authorization"] = f"Bearer {self.api_key}"
            self._local.session = session
        return session

    def _post_once(self, url: str, body: dict) -> dict:
        self.limiter.acquire()  # every attempt counts against the endpoint's rate limit, retries too
        response = self._session().post(url, json=body, timeout=(min(self.timeout, 10.0), self.timeout))
        if _retryable_status(response.status_code):
            raise _RetryableStatus(response.status_code, _short(response.text))
        if response.status_code != 200:
            raise EndpointError(f"POST {url} answered HTTP {response.status_code}: {_short(response.text)}")
        try:
            return response.json()
        except ValueError as exc:
            raise EndpointError(f"POST {url} answered something that is not JSON: {_short(response.text)}") from exc

    def post(self, path: str, body: dict) -> dict:
        url = f"{self.base_url}/{path.lstrip('/')}"
        retrying = Retrying(
            stop=stop_after_attempt(self.retries + 1),
            wait=wait_exponential(multiplier=self.backoff, max=self.backoff_max),
            retry=retry_if_exception_type((_RetryableStatus, requests.ConnectionError, requests.Timeout)),
            reraise=True,
        )
        try:
            return retrying(self._post_once, url, body)
        except _RetryableStatus as exc:
            raise EndpointError(f"POST {url} failed after {self.retries + 1} attempts: {exc}") from exc
        except requests.Timeout as exc:
            raise EndpointError(f"POST {url} timed out ({self.timeout:g} s) in {self.retries + 1} attempts") from exc
        except requests.RequestException as exc:
            raise EndpointError(f"POST {url} failed after {self.retries + 1} attempts: {exc}") from exc

    def served_models(self) -> list[str]:
        """GET /models; raises InputError with the fix when the endpoint cannot be used."""
        url = f"{self.base_url}/models"
        try:
            response = self._session().get(url, timeout=min(self.timeout, 10.0))
        except requests.ConnectionError as exc:
            raise InputError(
                f"cannot reach the model endpoint {self.base_url} (connection refused or host unknown)",
                field="base_url",
                fix=f"start the model server first, or pass --base-url pointing at a running OpenAI-compatible "
                f"server ({SERVE_HINT})",
            ) from exc
        except requests.Timeout as exc:
            raise InputError(f"the model endpoint {self.base_url} did not answer GET /models in time",
                             field="base_url", fix="check that the server is up and not overloaded") from exc
        if response.status_code in (401, 403):
            raise InputError(f"the model endpoint {self.base_url} refused the API key (HTTP {response.status_code})",
                             field="api_key", fix="pass --api-key or set OPENAI_API_KEY")
        if response.status_code != 200:
            raise InputError(
                f"GET {url} answered HTTP {response.status_code}: {_short(response.text)}",
                field="base_url",
                fix="base_url must be the OpenAI API root, ending in /v1 (e.g. http://127.0.0.1:8000/v1)",
            )
        try:
            return [str(entry["id"]) for entry in response.json().get("data", [])]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise InputError(f"GET {url} did not return an OpenAI model list", field="base_url",
                             fix="point --base-url at an OpenAI-compatible server") from exc

    def preflight(self) -> None:
        """Check reachability and the model name before any query runs. With no model given, adopt the
        only served one."""
        served = self.served_models()
        if self.model is None:
            if len(served) == 1:
                self.model = served[0]
                return
            raise InputError(f"no model name given and {self.base_url} serves {len(served)} models: "
                             f"{', '.join(served) or '(none)'}", field="model", fix="pass --model with one of them")
        if self.model not in served:
            raise InputError(
                f"model {self.model!r} is not served at {self.base_url}; served ids: {', '.join(served) or '(none)'}",
                field="model",
                fix=f"pass --model {served[0]}" if served else "load a model into the server",
            )


def read_usage(data: dict) -> tuple[int, int, int]:
    """(prompt, completion, total) tokens from an OpenAI response; zeros when the server sends no usage."""
    usage = data.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    total = int(usage.get("total_tokens") or prompt + completion)
    return prompt, completion, total


def first_choice(data: dict) -> dict:
    choices = data.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"the response has no choices: {_short(str(data))}")
    return choices[0]
