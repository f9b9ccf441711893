"""Client for the /virtual protocol (StableToolBench's server, ours, or a MirrorAPI server).

Sends upstream's payload through the one HTTP layer (toolbench_adapter/transport.py: retries, fault
kinds, the shared token bucket) and never raises to the caller: every failure becomes a ``ServerReply``
whose answer is the dict upstream's client would have built. Thread-safe: one client serves all threads
of a run (each thread gets its own requests.Session). Given several URLs (servers with the same cache and
tools), each call goes to the one with the fewest calls in flight (transport.EndpointPool).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from ..protocol import env as E
from ..protocol import server as S
from ..transport import FaultKind, HttpResult, HttpTransport, RetryPolicy, url_list
from .ratelimit import RateLimiter, shared_limiter

SOURCE_HEADER = "X-TBA-Source"  # our server names where an answer came from (cache, simulator, ...)


class ReplyKind(StrEnum):
    OK = "ok"  # HTTP 200 with a JSON body
    HTTP_ERROR = "http_error"  # HTTP status != 200 (after retries for 5xx and 429)
    NOT_JSON = "not_json"  # HTTP 200 but the body is not JSON
    TIMEOUT = "timeout"  # the request timed out on every attempt
    CONNECTION_ERROR = "connection_error"  # the server could not be reached on any attempt
    TRUNCATED_BODY = "truncated_body"  # the last attempt's reply was cut short (after retries)


# transport fault -> (reply kind, upstream's synthesized error text); upstream's client has no branch for an
# unreachable server or a cut body (it crashes): a run records both like its timeout, status 5
_FAULT_REPLIES = {
    FaultKind.TIMEOUT: (ReplyKind.TIMEOUT, E.TIMEOUT_ERROR),
    FaultKind.CONNECTION_ERROR: (ReplyKind.CONNECTION_ERROR, E.TIMEOUT_ERROR),
    FaultKind.TRUNCATED_BODY: (ReplyKind.TRUNCATED_BODY, E.TIMEOUT_ERROR),
    FaultKind.HTTP_5XX: (ReplyKind.HTTP_ERROR, E.REQUEST_INVALID_STATUS_ERROR),
    FaultKind.HTTP_429: (ReplyKind.HTTP_ERROR, E.REQUEST_INVALID_STATUS_ERROR),
    FaultKind.HTTP_4XX: (ReplyKind.HTTP_ERROR, E.REQUEST_INVALID_STATUS_ERROR),
    FaultKind.NOT_JSON: (ReplyKind.NOT_JSON, E.REQUEST_INVALID_ERROR),
}


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
    fault: str | None = None  # the transport FaultKind value of the last attempt (None when ok)
    faults: tuple[str, ...] = ()  # every failed attempt's FaultKind value, retried ones included


@dataclass(frozen=True)
class ClientConfig:
    url: str | Sequence[str]  # one /virtual URL, or several: the endpoints of one pool
    timeout_s: float | None = 120.0  # upstream sends /virtual calls without a timeout
    attempts: int = 3  # total tries for the transient faults (transport.TRANSIENT)
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    rate_per_s: float | None = None  # per server URL; None: no pacing (upstream: one call every 2 s per thread)
    burst: int = 1
    toolbench_key: str = ""
    strip: str = S.DEFAULT_STRIP


def virtual_url(url: str) -> str:
    """A bare ``http://host:port`` gets the /virtual path; a full endpoint URL is kept as given."""
    parts = urlsplit(url)
    if parts.path in ("", "/"):
        return url.rstrip("/") + S.VIRTUAL_PATH
    return url


def server_reply(result: HttpResult) -> ServerReply:
    """The reply upstream's client would have made of this HTTP result."""
    source = result.headers.get(SOURCE_HEADER)
    faults = tuple(fault.value for fault in result.faults)
    common = dict(http_status=result.status, latency_s=result.latency_s, attempts=result.attempts,
                  waited_s=result.waited_s, source=source, faults=faults)
    if result.fault is None:
        return ServerReply(answer=result.data, kind=ReplyKind.OK, **common)
    kind, error = _FAULT_REPLIES[result.fault]
    answer = {"error": error.format(status_code=result.status), "response": ""}
    detail = (result.text or result.detail) if kind in (ReplyKind.HTTP_ERROR, ReplyKind.NOT_JSON) else result.detail
    return ServerReply(answer=answer, kind=kind, detail=detail, fault=result.fault.value, **common)


class ServerClient:
    def __init__(self, config: ClientConfig | str | Sequence[str], limiter: RateLimiter | None = None,
                 **overrides: Any):
        """``limiter`` (one URL only) replaces the URL's shared limiter."""
        if not isinstance(config, ClientConfig):
            config = ClientConfig(url=config, **overrides)
        elif overrides:
            raise TypeError("pass overrides only with a URL string")
        self.config = config
        self.urls = [virtual_url(url) for url in url_list(config.url)]
        if not self.urls:
            raise ValueError("a tool-server client needs a URL")
        if limiter is not None and len(self.urls) > 1:
            raise ValueError("one limiter paces one URL: leave it out for several")
        self.url = self.urls[0]
        self.limiter = limiter or shared_limiter(self.url, config.rate_per_s, config.burst)
        policy = RetryPolicy(attempts=config.attempts, backoff_s=config.backoff_base_s,
                             backoff_max_s=config.backoff_max_s)
        self.transport = HttpTransport.over(
            self.urls, lambda url: self.limiter if url == self.url else shared_limiter(url, config.rate_per_s,
                                                                                       config.burst),
            policy=policy, timeout=config.timeout_s)

    def pool_stats(self) -> list[dict]:
        """Calls served and failed per server URL (for the run manifest)."""
        return self.transport.pool.stats()

    def payload(self, category: str, tool_name: str, api_name: str, tool_input: str | dict) -> dict:
        return {"category": category, "tool_name": tool_name, "api_name": api_name, "tool_input": tool_input,
                "strip": self.config.strip, "toolbench_key": self.config.toolbench_key}

    def call_route(self, route: Any, tool_input: str | dict) -> ServerReply:
        """``route`` is a toolset.Route (category, tool_name, api_name)."""
        return self.call(route.category, route.tool_name, route.api_name, tool_input)

    def call(self, category: str, tool_name: str, api_name: str, tool_input: str | dict) -> ServerReply:
        return self.post(self.payload(category, tool_name, api_name, tool_input))

    def post(self, payload: dict) -> ServerReply:
        headers = {S.TOOLBENCH_KEY_HEADER: str(payload.get("toolbench_key", self.config.toolbench_key))}
        return server_reply(self.transport.post_json("", payload, headers=headers))

    def close(self) -> None:
        self.transport.close()
