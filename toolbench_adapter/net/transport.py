"""The one HTTP layer: POST a JSON body, retry what is worth retrying, say what went wrong.

The tool-server client (server/client.py), the model endpoint (runners/models/openai_http.py) and the
judge client (evaluation/judging/chat.py) all go through ``HttpTransport.post_json``, so one fault has one name
(``FaultKind``) and one retry policy everywhere. ``post_json`` never raises for a transport or HTTP
fault: it returns an ``HttpResult`` (attempts, the last fault, HTTP status, latency, rate-limit wait)
and each client turns that into its own answer (a ServerReply, an EndpointError, a ChatError). Where a cap on
requests in flight is set for a URL (net/inflight.py: a sweep's shared endpoints), every attempt holds a slot of it.

Every request goes to an ``EndpointPool`` (one URL or several for one role): the endpoint with the fewest
requests in flight; one that fails at the transport level (timeout, connection error, cut body) is cooled
down for a while and the request tried on another, without spending the request's own retries.

Which faults are retried (``FaultKind.transient``):
- timeout, connection_error (refused / reset / closed before a reply), truncated_body (fewer bytes than
  Content-Length, a broken chunk), http_5xx, http_429: the same request may well succeed a moment later.
  A 429 or 503 that says ``Retry-After`` (seconds, or an HTTP date) is waited out as asked instead of the
  backoff, capped by the policy's ``backoff_max_s`` so one server cannot stall a run.
- http_4xx (any other status but 200) and not_json (HTTP 200 with a body that does not parse): the
  server understood the request and answered it; asking again gets the same answer. For the tool
  server, not_json is upstream's status-12 "request invalid, data error" path, which never retries.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any, Protocol

import requests
from tenacity import Retrying, retry_if_exception
from urllib3.exceptions import ReadTimeoutError

from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.net.inflight import cap_for
from toolbench_adapter.net.lean_http import LeanClient, LeanResponse


class FaultKind(StrEnum):
    TIMEOUT = "timeout"  # no (complete) answer within the timeout
    CONNECTION_ERROR = "connection_error"  # refused, reset, or closed before any reply
    TRUNCATED_BODY = "truncated_body"  # a reply whose body was cut short (Content-Length not met, broken chunk)
    HTTP_5XX = "http_5xx"
    HTTP_429 = "http_429"
    HTTP_4XX = "http_4xx"  # any other status but 200 (4xx in practice)
    NOT_JSON = "not_json"  # HTTP 200, but the body is not JSON

    @property
    def transient(self) -> bool:
        """Worth asking again (the request is retried)."""
        return self in TRANSIENT

    @property
    def transport(self) -> bool:
        """The endpoint itself failed (it is cooled down in a pool), as opposed to answering badly."""
        return self in TRANSPORT


TRANSPORT = frozenset({FaultKind.TIMEOUT, FaultKind.CONNECTION_ERROR, FaultKind.TRUNCATED_BODY})
TRANSIENT = TRANSPORT | {FaultKind.HTTP_5XX, FaultKind.HTTP_429}


def classify_exception(exc: requests.RequestException) -> FaultKind:
    """The fault behind an exception requests raised while sending or reading."""
    if isinstance(exc, requests.Timeout):  # ConnectTimeout is also a ConnectionError: check this first
        return FaultKind.TIMEOUT
    if isinstance(exc, requests.ConnectionError) and any(isinstance(arg, ReadTimeoutError) for arg in exc.args):
        return FaultKind.TIMEOUT  # requests reports a timeout while reading the body as a ConnectionError
    if isinstance(exc, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError)):
        return FaultKind.TRUNCATED_BODY  # urllib3's IncompleteRead / ProtocolError mid-body end up here
    return FaultKind.CONNECTION_ERROR


def classify_status(status: int) -> FaultKind | None:
    """None for 200 (the body still has to parse); the fault for any other status."""
    if status == 200:
        return None
    if status == 429:
        return FaultKind.HTTP_429
    if status >= 500:
        return FaultKind.HTTP_5XX
    return FaultKind.HTTP_4XX


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 3  # total tries, the first included
    backoff_s: float = 0.5  # the first wait; it doubles after each failed try
    backoff_max_s: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff_s < 0 or self.backoff_max_s < 0:
            raise ValueError("backoff times must not be negative")

    def wait_after(self, failures: int) -> float:
        """The wait after the ``failures``-th failed try (1-based)."""
        return min(self.backoff_max_s, self.backoff_s * 2 ** (failures - 1))


def retry_after_s(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait: delay-seconds or an HTTP date; None when absent or
    unreadable (then the policy's backoff applies)."""
    if value is None or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": RFC 9110 dates are GMT, so read it as such
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class Limiter(Protocol):
    def acquire(self) -> float:
        """Take one token, waiting if needed; returns the seconds waited (net/ratelimit.py)."""


@dataclass(frozen=True)
class HttpResult:
    url: str
    fault: FaultKind | None  # None: HTTP 200 with a JSON body; else the last attempt's fault
    status: int | None  # the last attempt's HTTP status (None when no reply came)
    data: Any  # the parsed body when ``fault`` is None
    text: str  # the body as text, cut to a few hundred characters (for messages), "" without a reply
    headers: Mapping[str, str]
    attempts: int
    latency_s: float  # the whole call: attempts, backoff, rate-limit waits and waits for a slot
    # time spent waiting for the rate limiter and for a slot of the URL's in-flight cap (net/inflight.py): not the
    # endpoint's latency (latency_s - waited_s, backoff aside, is the endpoint's)
    waited_s: float
    faults: tuple[FaultKind, ...] = ()  # every failed attempt's fault, in order (the last one included)
    detail: str | None = None  # the last exception or body excerpt, for messages and logs
    # a non-200 reply's body, parsed when it is JSON: tells a server's own error answer from a gateway's
    error_data: Any = None

    @property
    def ok(self) -> bool:
        return self.fault is None

    def describe(self) -> str:
        """One line for an error message: what failed, how often it was tried."""
        if self.fault is FaultKind.TIMEOUT:
            what = "timed out"
        elif self.fault in (FaultKind.HTTP_5XX, FaultKind.HTTP_429, FaultKind.HTTP_4XX):
            what = f"answered HTTP {self.status}: {self.text}"
        elif self.fault is FaultKind.NOT_JSON:
            what = f"answered something that is not JSON: {self.text}"
        elif self.fault is FaultKind.TRUNCATED_BODY:
            what = f"sent a reply cut short ({self.detail})"
        else:
            what = f"could not be reached ({self.detail})"
        tries = "1 attempt" if self.attempts == 1 else f"{self.attempts} attempts"
        return f"POST {self.url} {what} [{self.fault}, {tries}]"


@dataclass
class Endpoint:
    url: str
    limiter: Limiter | None = None  # paces every attempt sent here
    in_flight: int = 0
    served: int = 0  # attempts answered with HTTP 200 and JSON
    failed: int = 0  # attempts that ended in a fault
    faults: Counter = field(default_factory=Counter)  # FaultKind value -> attempts
    cooldowns: int = 0  # times it was taken out after a transport fault
    cooled_until: float = 0.0

    def join(self, path: str) -> str:
        return self.url if not path else f"{self.url.rstrip('/')}/{path.lstrip('/')}"


class EndpointPool:
    """The endpoints of one role. ``pick`` hands out the live endpoint with the fewest requests in flight
    (ties in turn); ``done`` gives it back and, after a transport fault, takes it out for ``cooldown_s``.
    When every endpoint is out, the one due back first is tried anyway: a pool never refuses a request.
    Thread-safe; ``stats`` is what a manifest records per endpoint."""

    def __init__(self, urls: Sequence[str], *, cooldown_s: float = 30.0,
                 limiter_for: Callable[[str], Limiter | None] = lambda url: None,
                 clock: Callable[[], float] = time.monotonic):
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        if len(set(urls)) != len(urls):
            raise ValueError(f"an endpoint is listed twice: {list(urls)}")
        self.endpoints = [Endpoint(url, limiter_for(url)) for url in urls]
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._turn = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.endpoints)

    def pick(self, avoid: frozenset[str] = frozenset()) -> Endpoint:
        """The endpoint for the next attempt; ``avoid``: URLs this request already failed on."""
        with self._lock:
            now = self._clock()
            live = [e for e in self.endpoints if e.cooled_until <= now and e.url not in avoid]
            if live:
                least = min(e.in_flight for e in live)
                ties = [e for e in live if e.in_flight == least]
                chosen = ties[self._turn % len(ties)]
                self._turn += 1
            else:
                chosen = min(self.endpoints, key=lambda e: (e.url in avoid, e.cooled_until, e.in_flight))
            chosen.in_flight += 1
            return chosen

    def done(self, endpoint: Endpoint, fault: FaultKind | None, *, counted: bool = True) -> bool:
        """Record one attempt's end; True when the endpoint was taken out and another one is live.
        ``counted=False``: the attempt never finished (an exception in the caller), only free its place."""
        with self._lock:
            endpoint.in_flight -= 1
            if not counted:
                return False
            if fault is None:
                endpoint.served += 1
                endpoint.cooled_until = 0.0  # a probe that succeeded brings it back at once
                return False
            endpoint.failed += 1
            endpoint.faults[fault.value] += 1
            if not fault.transport:
                return False
            now = self._clock()
            endpoint.cooled_until = now + self.cooldown_s
            endpoint.cooldowns += 1
            return any(e.cooled_until <= now for e in self.endpoints)

    def stats(self) -> list[dict]:
        with self._lock:
            return [{"url": e.url, "served": e.served, "failed": e.failed, "faults": dict(e.faults),
                     "cooldowns": e.cooldowns} for e in self.endpoints]


class _AttemptFailed(Exception):
    def __init__(self, kind: FaultKind, detail: str):
        super().__init__(detail)
        self.kind = kind


def short(text: str, limit: int = 300) -> str:
    text = text.strip().replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass
class _Sent:
    """One attempt's outcome."""

    data: Any = None
    fault: FaultKind | None = None
    detail: str | None = None
    response: requests.Response | LeanResponse | None = None


@dataclass
class HttpTransport:
    """Retrying JSON POSTs to an endpoint pool, with one requests.Session per thread (a Session is not
    guaranteed thread-safe). With ``lean`` on, a POST to a plain http:// URL that requests would send as is
    goes over net/lean_http.py's kept-alive connections instead (the same request, a third of the CPU); the rest,
    and every call a caller makes on ``session()``, goes through requests.

    ``headers`` go on every request of every thread (e.g. Authorization); ``timeout`` is requests'
    (seconds, a (connect, read) pair, or None for none). Each endpoint's limiter paces every attempt sent
    to it, retries too.
    """

    pool: EndpointPool
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float | tuple[float, float] | None = 60.0
    headers: Mapping[str, str] = field(default_factory=dict)
    sleep: Callable[[float], None] = time.sleep
    lean: bool = True  # False: every POST through requests (tests compare the two lanes with it)
    _local: threading.local = field(default_factory=threading.local, repr=False)

    @classmethod
    def to(cls, url: str, limiter: Limiter | None = None, **options: Any) -> HttpTransport:
        """A transport to one URL."""
        return cls(EndpointPool([url], limiter_for=lambda _: limiter), **options)

    @classmethod
    def over(cls, urls: Sequence[str], limiter_for: Callable[[str], Limiter | None] = lambda url: None,
             **options: Any) -> HttpTransport:
        """A transport to the endpoints of one role (one URL or several), each paced by its own limiter."""
        return cls(EndpointPool(list(urls), limiter_for=limiter_for), **options)

    def session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = EnvCachedSession()  # requests' Session, the environment read once per URL
            session.headers.update(self.headers)
            self._local.session = session
        return session

    def close(self) -> None:
        """Close this thread's session and lean connections (other threads' close with the process)."""
        lean = getattr(self._local, "lean", None)
        if lean is not None:
            lean.close()
            self._local.lean = None
        session = getattr(self._local, "session", None)
        if session is not None:
            session.close()
            self._local.session = None

    def _lean_client(self) -> LeanClient:
        client = getattr(self._local, "lean", None)
        if client is None:
            client = self._local.lean = LeanClient(self.session())
        return client

    def _send(self, url: str, body: Any, headers: Mapping[str, str] | None) -> _Sent:
        try:
            response = self._lean_client().post(url, body, headers, self.timeout) if self.lean else None
            if response is None:  # a URL, session or reply the lean lane leaves to requests
                response = self.session().post(url, json=body, headers=headers, timeout=self.timeout)
        except requests.RequestException as exc:
            return _Sent(fault=classify_exception(exc), detail=str(exc))
        kind = classify_status(response.status_code)
        if kind is not None:
            return _Sent(fault=kind, detail=f"HTTP {response.status_code}", response=response)
        try:
            return _Sent(data=response.json(), response=response)
        except ValueError:  # requests' JSONDecodeError included
            return _Sent(fault=FaultKind.NOT_JSON, detail="the body is not JSON", response=response)

    @staticmethod
    def _asked_wait(sent: _Sent) -> float | None:
        """The wait a 429 / 503 asked for in its Retry-After header (RFC 9110 names both statuses)."""
        if sent.response is None or sent.response.status_code not in (429, 503):
            return None
        return retry_after_s(sent.response.headers.get("Retry-After"))

    def post_json(self, path: str, body: Any, *, headers: Mapping[str, str] | None = None) -> HttpResult:
        """POST ``body`` to ``path`` under a pool endpoint ("" for the endpoint URL itself)."""
        started = time.perf_counter()
        waited = 0.0
        faults: list[FaultKind] = []
        tried: set[str] = set()
        failovers = 0  # attempts that moved on to another endpoint: they spend none of the policy's tries
        failed_over = False
        last = _Sent()
        url = ""

        def attempt() -> Any:
            nonlocal waited, failovers, failed_over, last, url
            endpoint = self.pool.pick(frozenset(tried))
            url = endpoint.join(path)
            try:
                # a cap on requests in flight to this URL, shared by every transport of the process (net/inflight.py);
                # a retry takes a slot again
                with cap_for(endpoint.url) or nullcontext(0.0) as slot_wait:
                    waited += slot_wait
                    if endpoint.limiter is not None:
                        waited += endpoint.limiter.acquire()
                    last = self._send(url, body, headers)
            except BaseException:
                self.pool.done(endpoint, None, counted=False)
                raise
            failed_over = self.pool.done(endpoint, last.fault) and failovers < len(self.pool) - 1
            if last.fault is None:
                return last.data
            faults.append(last.fault)
            tried.add(endpoint.url)
            failovers += failed_over
            raise _AttemptFailed(last.fault, last.detail or "")

        def stop(attempts: int) -> bool:  # after the ``attempts``-th attempt failed
            return attempts - failovers >= self.policy.attempts

        def wait(attempts: int) -> float:
            if failed_over:
                return 0.0
            asked = self._asked_wait(last)
            if asked is not None:
                return min(self.policy.backoff_max_s, asked)
            return self.policy.wait_after(attempts - failovers)

        fault, data = None, None
        try:  # the first attempt as tenacity would make it, without building a Retrying: most calls end here
            data = attempt()
        except _AttemptFailed as exc:
            fault = exc.kind
        if fault is not None and fault.transient and not stop(1):
            # the rest as before: tenacity's attempt n is attempt n + 1, after the first one's wait
            self.sleep(wait(1))
            retrying = Retrying(stop=lambda state: stop(state.attempt_number + 1),
                                wait=lambda state: wait(state.attempt_number + 1), sleep=self.sleep, reraise=True,
                                retry=retry_if_exception(lambda exc: isinstance(exc, _AttemptFailed)
                                                         and exc.kind.transient))
            fault = None
            try:
                data = retrying(attempt)
            except _AttemptFailed as exc:
                fault = exc.kind
        response = last.response
        return HttpResult(
            url=url, fault=fault, status=None if response is None else response.status_code, data=data,
            text="" if response is None else short(response.text), headers={} if response is None else
            response.headers, attempts=len(faults) + (fault is None), latency_s=time.perf_counter() - started,
            waited_s=waited, faults=tuple(faults), detail=last.detail, error_data=_error_json(response))


def _error_json(response: requests.Response | LeanResponse | None) -> Any:
    """The parsed body of a reply that is not a 200, or None (no reply, a 200, or a body that is not JSON)."""
    if response is None or response.status_code == 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def url_list(value: str | Sequence[str] | None) -> list[str]:
    """The URLs of one role as a list: a single URL (flags and config files as they always were), or a list
    of them (the flag repeated, a YAML list). Empty entries are dropped."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [str(item).strip() for item in items if str(item).strip()]


def merge_stats(*groups: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Per-endpoint stats from several pools of the same role (e.g. one per worker process) added up, in the
    order the URLs first appear."""
    merged: dict[str, dict] = {}
    for stats in groups:
        for entry in stats:
            into = merged.setdefault(entry["url"], {"url": entry["url"], "served": 0, "failed": 0, "faults": {},
                                                    "cooldowns": 0})
            for key in ("served", "failed", "cooldowns"):
                into[key] += int(entry.get(key, 0))
            for kind, count in (entry.get("faults") or {}).items():
                into["faults"][kind] = into["faults"].get(kind, 0) + int(count)
    return list(merged.values())
