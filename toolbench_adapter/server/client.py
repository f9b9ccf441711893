"""Client for the /virtual protocol (StableToolBench's server, ours, or a MirrorAPI server).

Sends upstream's payload through the one HTTP layer (toolbench_adapter/net/transport.py: retries, fault
kinds, the shared token bucket) and never raises to the caller: every failure becomes a ``ServerReply``
whose answer is the dict upstream's client would have built. Thread-safe: one client serves all threads
of a run (each thread gets its own requests.Session). Given several URLs (servers with the same cache and
tools), each call goes to the one with the fewest calls in flight (transport.EndpointPool).

``preflight`` asks every URL one known request before a run spends anything: a dead server, a wrong path
(404), a gateway that refuses the harness (401/403) or something that does not speak /virtual is exit 2
naming the URL, what it answered and the fix. During a run, a 401/403/404/405/407 whose body is not a
/virtual answer is ``ReplyKind.WRONG_ENDPOINT``: the call never reached a tool server, so the run counts an
infrastructure failure instead of recording upstream's status 12 against the model. A tool server's own
error answers (its ``{"error", "response"}`` bodies, e.g. our 404 for an unknown api) stay upstream's.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from toolbench_adapter.net.ratelimit import RateLimiter, shared_limiter
from toolbench_adapter.net.transport import FaultKind, HttpResult, HttpTransport, RetryPolicy, url_list

from ..errors import InputError
from ..protocol import env as E
from ..protocol import server as S

SOURCE_HEADER = "X-TBA-Source"  # our server names where an answer came from (cache, simulator, ...)


class ReplyKind(StrEnum):
    OK = "ok"  # HTTP 200 with a JSON body
    HTTP_ERROR = "http_error"  # HTTP status != 200 (after retries for 5xx and 429)
    NOT_JSON = "not_json"  # HTTP 200 but the body is not JSON
    TIMEOUT = "timeout"  # the request timed out on every attempt
    CONNECTION_ERROR = "connection_error"  # the server could not be reached on any attempt
    TRUNCATED_BODY = "truncated_body"  # the last attempt's reply was cut short (after retries)
    # HTTP 401/403/404/405/407 with a body that is not a /virtual answer: a wrong URL path, or a gateway or
    # proxy in front of the server refused the harness. No tool server saw the call: an infrastructure failure
    WRONG_ENDPOINT = "wrong_endpoint"


# statuses that, without a /virtual answer in the body, mean the request never reached a tool server
NOT_REACHED_STATUSES = frozenset({401, 403, 404, 405, 407})
# the preflight's tool input: not JSON, so upstream's server answers its "Tool input parse error" at once,
# before any cache, real-API or model work (server/main.py; MirrorAPI's servers and ours do the same)
PREFLIGHT_TOOL_INPUT = "tba preflight: not JSON"
PREFLIGHT_NAME = "tba_preflight"
PREFLIGHT_TIMEOUT_S = 30.0


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


def is_virtual_answer(body: Any) -> bool:
    """A body in the /virtual answer shape ``{"error": ..., "response": ...}``."""
    return isinstance(body, dict) and "error" in body and "response" in body


def not_reached(result: HttpResult) -> bool:
    """A refusal that no tool server wrote: a 401/403/404/405/407 without a /virtual answer in its body."""
    return (result.fault is FaultKind.HTTP_4XX and result.status in NOT_REACHED_STATUSES
            and not is_virtual_answer(result.error_data))


def server_reply(result: HttpResult) -> ServerReply:
    """The reply upstream's client would have made of this HTTP result."""
    source = result.headers.get(SOURCE_HEADER)
    faults = tuple(fault.value for fault in result.faults)
    common = dict(http_status=result.status, latency_s=result.latency_s, attempts=result.attempts,
                  waited_s=result.waited_s, source=source, faults=faults)
    if result.fault is None:
        return ServerReply(answer=result.data, kind=ReplyKind.OK, **common)
    kind, error = _FAULT_REPLIES[result.fault]
    if not_reached(result):
        kind = ReplyKind.WRONG_ENDPOINT  # the observation stays upstream's status-12 answer
    answer = {"error": error.format(status_code=result.status), "response": ""}
    answered = (ReplyKind.HTTP_ERROR, ReplyKind.NOT_JSON, ReplyKind.WRONG_ENDPOINT)
    detail = (result.text or result.detail) if kind in answered else result.detail
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

    def preflight(self, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
        """One known request to every URL (at once); raises InputError (exit 2) naming each that answers it
        unlike a /virtual server (a wrong path, a gateway refusing, not the protocol). Of several URLs, one that
        does not answer at all yet is named on stderr and kept (a server still starting joins when it answers),
        as the model endpoints' preflight does; none answering is exit 2."""
        with ThreadPoolExecutor(max_workers=min(len(self.urls), 16)) as pool:
            checks = list(pool.map(lambda url: self.check_endpoint_result(url, timeout_s), self.urls))
        wrong = [problem for problem, unreachable in checks if problem and not unreachable]
        silent = [problem for problem, unreachable in checks if problem and unreachable]
        if len(silent) == len(self.urls) or wrong:
            problems = wrong or silent
            count = (f"{len(problems)} of {len(self.urls)} tool servers" if len(self.urls) > 1
                     else "the tool server")
            raise InputError(f"{count} did not answer a /virtual request:\n  " + "\n  ".join(problems),
                             field="--server",
                             fix="pass the URL of a running tool server: `tba serve` or StableToolBench's server "
                             "(http://HOST:PORT, or its full /virtual URL), or leave --server out for the embedded one")
        for problem in silent:
            print(f"warning: {problem}; its calls go to the other tool servers until it answers", file=sys.stderr)

    def check_endpoint_result(self, url: str, timeout_s: float) -> tuple[str | None, bool]:
        """(what ``url`` answered wrong or None, whether it did not answer at all)."""
        problem, result = self._check(url, timeout_s)
        unreachable = result is not None and result.fault in (FaultKind.CONNECTION_ERROR, FaultKind.TIMEOUT)
        return problem, unreachable

    def check_endpoint(self, url: str, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> str | None:
        """None when ``url`` answers the preflight request as a /virtual server does; else what it answered
        and the fix, in one line. Unpaced (one request), retried like any call."""
        return self._check(url, timeout_s)[0]

    def _check(self, url: str, timeout_s: float) -> tuple[str | None, HttpResult | None]:
        timeout = timeout_s if self.config.timeout_s is None else min(timeout_s, self.config.timeout_s)
        transport = HttpTransport.to(url, policy=self.transport.policy, timeout=timeout)
        try:
            payload = self.payload(PREFLIGHT_NAME, PREFLIGHT_NAME, PREFLIGHT_NAME, PREFLIGHT_TOOL_INPUT)
            result = transport.post_json("", payload, headers={S.TOOLBENCH_KEY_HEADER: self.config.toolbench_key})
        finally:
            transport.close()
        if result.ok:
            if isinstance(result.data, dict) and "error" in result.data:
                return None, result
            return (f"POST {url} answered HTTP 200 with JSON that is not a /virtual answer "
                    f"({{\"error\": ..., \"response\": ...}}): {result.text}; fix: this URL is not a tool server's "
                    f"/virtual endpoint"), result
        return f"{result.describe()}; fix: {_preflight_fix(result)}", result


def _preflight_fix(result: HttpResult) -> str:
    if result.fault in (FaultKind.CONNECTION_ERROR, FaultKind.TIMEOUT, FaultKind.TRUNCATED_BODY):
        return "start the server there (`tba serve --port PORT`), or correct the host and port"
    if result.status in (404, 405):
        return (f"no /virtual endpoint at this path: pass the server's base URL (http://HOST:PORT) or "
                f"http://HOST:PORT{S.VIRTUAL_PATH}")
    if result.status in (401, 403, 407):
        return ("a gateway or proxy refused the request: check the URL, the proxy settings (NO_PROXY for a local "
                "server) and any credentials the gateway needs")
    if result.fault is FaultKind.NOT_JSON:
        return "this URL serves something else than a tool server's /virtual endpoint"
    return "see the server's log: it fails on a request it answers at once when healthy"
