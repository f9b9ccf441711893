"""Connection limits that keep the tool server answering when clients misbehave (issue 21 item 8).

uvicorn has no timeout for a request's head and no cap on connections: sockets opened and left silent
(half-open, a slowloris sending one byte now and then, a crashed client behind a NAT) pile up until the
process runs out of file descriptors, and then even /health cannot be accepted. ``guarded_protocol`` wraps
the HTTP protocol uvicorn would pick with three rules:

- a connection that has not sent a complete request head within ``read_timeout_s`` of opening (or, after
  an answer, of sending the first bytes of its next request) is closed; so is one whose body stops coming
  for ``read_timeout_s`` after its head (uvicorn's keep-alive timeout still closes idle connections);
- at most ``max_connections`` are open: one more closes the connection idle longest (no request in
  progress), or, when every one is busy, is answered 503 with Retry-After and closed;
- ``max_connections`` is kept below the process's open-file limit (``fit_to_open_files``), and so is the
  accept backlog: asyncio accepts up to ``backlog`` sockets in one go before any of them is seen (and an
  idle one closed), and on running out of descriptors it logs once per socket of the backlog.

No per-request work on the hot path beyond one comparison in ``data_received``: timers are set once per
connection, and again only for a request that arrives in pieces.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import Any

DEFAULT_MAX_CONNECTIONS = 1024
DEFAULT_READ_TIMEOUT_S = 10.0
DEFAULT_BACKLOG = 2048  # uvicorn's: connections waiting to be accepted, and accepted in one go
REFUSED_LINGER_S = 1.0  # a refused connection reads (and drops) the client's request this long, then closes
KEEP_ALIVE_S = 30  # uvicorn's timeout_keep_alive: an idle keep-alive connection is closed after this
# descriptors kept apart from client connections: for accept bursts (an idle connection closed to make room
# frees its descriptor a few loop turns later, while every turn may accept a backlog's worth: 3 backlogs),
# and the rest (listening socket, event loop, cache files, a simulator's HTTP connections)
RESERVED_FILES = 128
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"
         b"Content-Length: 25\r\nConnection: close\r\n\r\ntoo many open connections")


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    backlog: int = DEFAULT_BACKLOG

    def __post_init__(self) -> None:
        if self.max_connections < 1:
            raise ValueError(f"max_connections must be at least 1 (got {self.max_connections})")
        if not self.read_timeout_s > 0:
            raise ValueError(f"read_timeout_s must be positive (got {self.read_timeout_s})")


@dataclass
class ConnectionStats:
    """What the guard did, for /health."""

    limits: ConnectionLimits
    open: OrderedDict = field(default_factory=OrderedDict)  # protocol -> None, oldest activity first
    timed_out: int = 0  # closed for a head or body that did not come in time
    evicted: int = 0  # idle connections closed to make room
    refused: int = 0  # answered 503: every connection was busy

    def snapshot(self) -> dict:
        busy = sum(not protocol._idle() for protocol in list(self.open))
        return {"open": len(self.open), "busy": busy, "max": self.limits.max_connections,
                "read_timeout_s": self.limits.read_timeout_s, "timed_out": self.timed_out,
                "evicted": self.evicted, "refused": self.refused}


async def read_body_capped(request: Any, limit: int) -> bytes | None:
    """A Starlette request's body, or None when it is larger than ``limit`` bytes (checked while reading, not
    after). Raises starlette's ClientDisconnect when the client went away, or stopped sending and was cut off."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def open_files_limit(raise_to_hard: bool = False) -> int | None:
    """The soft limit on open files (None: unlimited, or not POSIX); ``raise_to_hard`` first raises it to the
    hard limit where allowed (a server process's usual start-up step; not done for servers inside another
    command)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if raise_to_hard and soft != hard and hard != resource.RLIM_INFINITY:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def fit_to_open_files(limits: ConnectionLimits, open_files: int | None) -> tuple[ConnectionLimits, str | None]:
    """``limits`` with max_connections and the backlog lowered to fit the open-file limit, and a note when
    max_connections was lowered."""
    if open_files is None:
        return limits, None
    reserve = max(RESERVED_FILES, open_files // 8)
    ceiling = max(1, open_files - reserve)
    fitted = replace(limits, max_connections=min(limits.max_connections, ceiling),
                     backlog=max(1, min(limits.backlog, reserve // 4)))
    if fitted.max_connections == limits.max_connections:
        return fitted, None
    return fitted, (f"max connections {limits.max_connections} lowered to {ceiling}: the open-file limit is "
                    f"{open_files} (raise it with `ulimit -n` to allow more)")


def guarded_protocol(limits: ConnectionLimits) -> tuple[type[asyncio.Protocol], ConnectionStats]:
    """A protocol class for ``uvicorn.Config(http=...)`` enforcing ``limits``, and the stats it keeps (one
    server's: a class per server)."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol  # here: the CLI imports this module's constants

    stats = ConnectionStats(limits)
    timeout = limits.read_timeout_s

    class GuardedProtocol(AutoHTTPProtocol):
        _tba_timer: asyncio.TimerHandle | None = None
        _tba_cycle = None  # the request cycle seen last: a new one means a complete request head arrived
        _tba_waiting_body = False  # the timer runs for a body, not for a head
        _tba_refused = False

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            if len(stats.open) >= limits.max_connections and not self._make_room():
                self._refuse()
                return
            stats.open[self] = None
            self._arm(waiting_body=False)

        def _refuse(self) -> None:
            """503, then FIN; what the client sent meanwhile is dropped (closing with it unread would send a
            reset, which may reach the client before the 503 does)."""
            stats.refused += 1
            self._tba_refused = True
            self.transport.write(_BUSY)
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._tba_timer = self.loop.call_later(REFUSED_LINGER_S, self.transport.close)

        def _make_room(self) -> bool:
            for other in stats.open:
                if other._idle():
                    stats.evicted += 1
                    other._close()
                    return True
            return False

        def _idle(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _close(self) -> None:
            stats.open.pop(self, None)
            self._disarm()
            self.transport.close()

        def _arm(self, waiting_body: bool) -> None:
            self._disarm()
            self._tba_waiting_body = waiting_body
            self._tba_timer = self.loop.call_later(timeout, self._expire)

        def _disarm(self) -> None:
            if self._tba_timer is not None:
                self._tba_timer.cancel()
                self._tba_timer = None

        def _expire(self) -> None:
            self._tba_timer = None
            if self.transport.is_closing() or self.cycle is not self._tba_cycle:
                return  # a request head arrived meanwhile
            if self._tba_waiting_body and not self.cycle.more_body:
                return  # the body came: the answer is the app's to give
            stats.timed_out += 1
            self._close()

        def data_received(self, data: bytes) -> None:
            if self._tba_refused:
                return
            super().data_received(data)
            cycle = self.cycle
            if cycle is not self._tba_cycle:  # a request head arrived
                self._tba_cycle = cycle
                if cycle.more_body:
                    self._arm(waiting_body=True)
                else:
                    self._disarm()
                if self in stats.open:
                    stats.open.move_to_end(self)
            elif (self._tba_timer is None or self._tba_waiting_body) and (cycle is None or cycle.response_complete):
                self._arm(waiting_body=False)  # the first bytes of a next head (uvicorn's keep-alive timer is off)

        def connection_lost(self, exc) -> None:
            stats.open.pop(self, None)
            self._disarm()
            super().connection_lost(exc)

    return GuardedProtocol, stats
