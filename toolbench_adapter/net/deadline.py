"""A timeout that bounds the whole request: connect, send, headers and body together.

A socket timeout bounds each read alone and starts again on every byte, so an endpoint that sends its reply one
byte every 0.5 s passes any timeout of a second or more and holds the caller forever. Here every HTTP exchange
of the project runs under a ``Deadline``: the sockets it uses are registered with it (``watch``), and one
watchdog thread for the process shuts them down when the deadline passes. The blocked read then returns at once
(end of file, or an error), and the caller, seeing ``expired``, reports a timeout: requests' ``ReadTimeout``,
which the transport names ``timeout`` like every other.

    with Deadline(30.0) as deadline:        # the exchange's sockets: deadline.watch(sock) (the lanes do it)
        ...                                  # after an error: deadline.expired says whether the time ran out

Deadlines nest: an inner one never outlives the one around it (a redirect's request inside the first one's).
The cost on the hot path is two lock round trips per request, ~4 µs of CPU (benchmarks/bench_http.py measures
the lanes with it); the watchdog sleeps until the earliest deadline in flight and wakes about once per timeout
while requests run.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

_local = threading.local()  # .current: the innermost Deadline of this thread, or None


class Deadline:
    """The end of one request, ``seconds`` from now (None: no end, nothing watched)."""

    __slots__ = ("at", "seconds", "expired", "_sockets", "_outer")

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + max(0.0, seconds)
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._outer: Deadline | None = None

    def passed(self) -> bool:
        """The time is up (the watchdog may not have run yet): an error now is this deadline's doing. A socket
        timeout cut to the time left may fire a hair before it (the kernel's clock): 10 ms count as up."""
        return self.expired or (self.at is not None and time.monotonic() >= self.at - 0.01)

    def socket_timeout(self, timeout: float | None) -> float | None:
        """``timeout`` for one socket operation, cut to the time left (never 0: that would be non-blocking)."""
        left = self.remaining()
        if left is None:
            return timeout
        left = max(left, 0.001)
        return left if timeout is None else min(timeout, left)

    def remaining(self) -> float | None:
        """Seconds left (0.0 once passed), None without an end: what a socket's own timeout may be at most."""
        return None if self.at is None else max(0.0, self.at - time.monotonic())

    def watch(self, sock: Any) -> None:
        """Shut ``sock`` down when this deadline passes (while the deadline is open)."""
        if self.at is not None and sock is not None:
            # no lock: the watchdog sets ``expired`` before it walks the list, so a socket it may have missed is
            # seen as expired here and shut by this thread (shutting one twice does no harm)
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def __enter__(self) -> Deadline:
        outer = getattr(_local, "current", None)
        if outer is not None and outer.at is not None and (self.at is None or outer.at < self.at):
            self.at = outer.at  # never outlive the request around this one
        self._outer = outer
        _local.current = self
        if self.at is not None:
            _WATCHDOG.add(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _local.current = self._outer
        if self.at is not None:
            _WATCHDOG.discard(self)

    def describe(self) -> str:
        """Why the request ended, for messages: the whole request's limit, not a single read's."""
        return f"no complete reply within {self.seconds:g} s (the whole request: connect, send, headers and body)"


def watch_current(sock: Any) -> None:
    """Watch ``sock`` under the innermost open Deadline of this thread, when one is open (the lanes register
    their sockets with it)."""
    deadline = getattr(_local, "current", None)
    if deadline is not None:
        deadline.watch(sock)


def _shut(sock: Any) -> None:
    try:  # the base class's: an SSL socket's own shutdown would drop its SSL state under the reading thread
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except (OSError, TypeError, ValueError):
        pass  # closed already, or not a socket: nothing blocks on it


class _Watchdog:
    """One daemon thread for the process: sleeps until the earliest open deadline, then shuts down the sockets of
    every deadline that has passed. Started on the first deadline."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._wake = threading.Condition(self.lock)
        self._open: set[Deadline] = set()
        self._wake_at = float("inf")  # when the thread wakes next (a new earlier deadline wakes it sooner)
        self._thread: threading.Thread | None = None

    def add(self, deadline: Deadline) -> None:
        with self.lock:
            self._open.add(deadline)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tba-request-deadlines", daemon=True)
                self._thread.start()
            if deadline.at < self._wake_at:
                self._wake.notify()

    def discard(self, deadline: Deadline) -> None:
        with self.lock:  # after this, the watchdog never touches the deadline's sockets (they may serve others)
            self._open.discard(deadline)
            deadline._sockets.clear()

    def _run(self) -> None:
        with self.lock:
            while True:
                now = time.monotonic()
                for deadline in [d for d in self._open if d.at <= now]:
                    deadline.expired = True
                    self._open.discard(deadline)
                    for sock in deadline._sockets:
                        _shut(sock)
                self._wake_at = min((d.at for d in self._open), default=float("inf"))
                self._wake.wait(None if self._wake_at == float("inf") else self._wake_at - now)


_WATCHDOG = _Watchdog()


def limit_of(timeout: Any) -> float | None:
    """The whole-request limit a requests-style ``timeout`` means: the number, or the larger of a (connect, read)
    pair (the read limit in practice: it is the one the user gave); None for none."""
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    if isinstance(timeout, tuple) and len(timeout) == 2 and all(isinstance(t, (int, float)) for t in timeout):
        return float(max(timeout))
    return None
