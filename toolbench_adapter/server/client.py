"""Client for the /virtual protocol (StableToolBench's server, ours, or a MirrorAPI server).

Sends upstream's payload, retries what is worth retrying (connection errors, timeouts, 5xx) with capped
exponential backoff, paces calls with a shared token bucket, and never raises to the caller: every
failure becomes a ``ServerReply`` whose answer is the dict upstream's client would have built.
Thread-safe: one client serves all threads of a run (each thread gets its own requests.Session).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

import requests
from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from ..protocol import env as E
from ..protocol import server as S
from .ratelimit import RateLimiter, shared_limiter

SOURCE_HEADER = "X-TBA-Source"  # our server names where an answer came from (cache, simulator, ...)


class ReplyKind(StrEnum):
    OK = "ok"  # HTTP 200 with a JSON body
    HTTP_ERROR = "http_error"  # HTTP status != 200 (after retries for 5xx)
    NOT_JSON = "not_json"  # HTTP 200 but the body is not JSON
    TIMEOUT = "timeout"  # the request timed out on every attempt
    CONNECTION_ERROR = "connection_error"  # the server could not be reached on any attempt


@dataclass(frozen=True)
class ServerReply:
    answer: Any  # the parsed body, or upstream's synthesized {"error": ..., "response": ""} on failure
    kind: ReplyKind
    http_status: int | None
    latency_s: float  # the whole call: attempts, backoff and rate-limit wait
    attempts: int
    waited_s: float  # time spent waiting for the rate limiter
    source: str | None = None  # our server's X-TBA-Source header, when present
    detail: str | None = None  # the last exception, for logs


@dataclass(frozen=True)
class ClientConfig:
    url: str
    timeout_s: float | None = 120.0  # upstream sends /virtual calls without a timeout
    attempts: int = 3  # total tries for connection errors, timeouts and 5xx
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    rate_per_s: float | None = None  # None: no pacing (upstream: one call every 2 s per thread)
    burst: int = 1
    toolbench_key: str = ""
    strip: str = S.DEFAULT_STRIP


class _RetryableStatus(Exception):
    def __init__(self, response: requests.Response):
        super().__init__(f"HTTP {response.status_code}")
        self.response = response


def virtual_url(url: str) -> str:
    """A bare ``http://host:port`` gets the /virtual path; a full endpoint URL is kept as given."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + S.VIRTUAL_PATH
    return url


class ServerClient:
    def __init__(self, config: ClientConfig | str, limiter: RateLimiter | None = None, **overrides: Any):
        if isinstance(config, str):
            config = ClientConfig(url=config, **overrides)
        elif overrides:
            raise TypeError("pass overrides only with a URL string")
        if config.attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.config = config
        self.url = virtual_url(config.url)
        self.limiter = limiter or shared_limiter(self.url, config.rate_per_s, config.burst)
        self._local = threading.local()

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            self._local.session = session
        return session

    def payload(self, category: str, tool_name: str, api_name: str, tool_input: str | dict) -> dict:
        return {"category": category, "tool_name": tool_name, "api_name": api_name, "tool_input": tool_input,
                "strip": self.config.strip, "toolbench_key": self.config.toolbench_key}

    def call_route(self, route: Any, tool_input: str | dict) -> ServerReply:
        """``route`` is a toolset.Route (category, tool_name, api_name)."""
        return self.call(route.category, route.tool_name, route.api_name, tool_input)

    def call(self, category: str, tool_name: str, api_name: str, tool_input: str | dict) -> ServerReply:
        return self.post(self.payload(category, tool_name, api_name, tool_input))

    def post(self, payload: dict) -> ServerReply:
        started = time.perf_counter()
        waited = 0.0
        attempts = 0
        headers = {S.TOOLBENCH_KEY_HEADER: str(payload.get("toolbench_key", self.config.toolbench_key))}

        def attempt() -> requests.Response:
            nonlocal waited, attempts
            waited += self.limiter.acquire()
            attempts += 1
            response = self._session().post(self.url, json=payload, headers=headers, timeout=self.config.timeout_s)
            if response.status_code >= 500:
                raise _RetryableStatus(response)
            return response

        retrying = Retrying(
            stop=stop_after_attempt(self.config.attempts),
            wait=wait_exponential(multiplier=self.config.backoff_base_s, max=self.config.backoff_max_s),
            retry=retry_if_exception_type((requests.ConnectionError, requests.Timeout, _RetryableStatus)),
            reraise=True,
        )

        def reply(answer: Any, kind: ReplyKind, status: int | None, source=None, detail=None) -> ServerReply:
            return ServerReply(answer=answer, kind=kind, http_status=status, latency_s=time.perf_counter() - started,
                               attempts=attempts, waited_s=waited, source=source, detail=detail)

        try:
            response = retrying(attempt)
        except _RetryableStatus as exc:
            response = exc.response
        except requests.Timeout as exc:
            return reply({"error": E.TIMEOUT_ERROR, "response": ""}, ReplyKind.TIMEOUT, None, detail=str(exc))
        except requests.RequestException as exc:
            # upstream has no branch for an unreachable server (it crashes); a run records it as a timeout
            return reply({"error": E.TIMEOUT_ERROR, "response": ""}, ReplyKind.CONNECTION_ERROR, None,
                         detail=str(exc))
        source = response.headers.get(SOURCE_HEADER)
        if response.status_code != 200:
            answer = {"error": E.REQUEST_INVALID_STATUS_ERROR.format(status_code=response.status_code),
                      "response": ""}
            return reply(answer, ReplyKind.HTTP_ERROR, response.status_code, source, detail=response.text[:500])
        try:
            answer = response.json()
        except ValueError:
            return reply({"error": E.REQUEST_INVALID_ERROR, "response": ""}, ReplyKind.NOT_JSON, 200, source,
                         detail=response.text[:500])
        return reply(answer, ReplyKind.OK, 200, source)

    def close(self) -> None:
        session = getattr(self._local, "session", None)
        if session is not None:
            session.close()
            self._local.session = None
