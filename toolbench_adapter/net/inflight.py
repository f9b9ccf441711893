"""Per-endpoint caps on requests in flight, shared by every HttpTransport of the process.

Several runs at once (a sweep's cells) each build their own transports to the same model or judge endpoint;
a cap set here for the endpoint's URL is the one every one of them holds around an attempt
(transport.HttpTransport.post_json), so the endpoint never sees more than ``max_in_flight`` requests from
this process however many runs share it. Without a cap (an ordinary run) nothing changes: ``cap_for`` is a
dict lookup that answers None.

Each cap also keeps busy-slot accounting: the integral of slots held over time since it was set (or
reset), so ``utilisation`` says how much of the capacity the process kept busy.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from toolbench_adapter.net.ratelimit import RateLimiter


class Mark(NamedTuple):
    """A point of a cap's accounting: the clock's time and the busy slot-seconds up to it."""

    at: float
    busy_s: float


class Cap:
    """At most ``max_in_flight`` holders at once. ``with cap as waited:`` takes a slot (waiting for one when all
    are held; ``waited`` is the seconds that took) and gives it back at the end. Thread-safe."""

    def __init__(self, max_in_flight: int, *, rate_per_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        if int(max_in_flight) < 1:
            raise ValueError(f"max_in_flight must be at least 1, not {max_in_flight}")
        self.max_in_flight = int(max_in_flight)
        # the endpoint's pace too (requests per second, every holder's): taken once a slot is held
        self.pace = None
        if rate_per_s:
            self.pace = RateLimiter(rate_per_s)
        self._slots = threading.Semaphore(self.max_in_flight)
        self._clock = clock
        self._lock = threading.Lock()
        self.in_flight = 0
        self.reset()

    def reset(self) -> None:
        """Start the accounting afresh (slots held now stay held, and count from now on)."""
        with self._lock:
            self._start = self._last = self._clock()
            self._busy = 0.0  # slot-seconds from _start to _last
            self.requests = 0
            self.peak = self.in_flight
            self.waited_s = 0.0  # the holders' total wait for a slot

    def _advance(self, now: float) -> None:  # under _lock: the integral up to now
        self._busy += self.in_flight * (now - self._last)
        self._last = now

    def __enter__(self) -> float:
        asked = self._clock()
        self._slots.acquire()
        with self._lock:
            now = self._clock()
            self._advance(now)
            self.in_flight += 1
            self.requests += 1
            self.peak = max(self.peak, self.in_flight)
            self.waited_s += now - asked
        paced = self.pace.acquire() if self.pace is not None else 0.0
        return now - asked + paced

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._advance(self._clock())
            self.in_flight -= 1
        self._slots.release()

    def mark(self) -> Mark:
        """Now, and the busy slot-seconds so far (slots still held counted up to now)."""
        with self._lock:
            self._advance(self._clock())
            return Mark(self._last, self._busy)

    def utilisation(self, since: Mark | None = None, until: Mark | None = None) -> float:
        """Busy slot-seconds over available (max_in_flight x seconds) between two marks; ``since`` defaults to
        the cap's start (set or reset), ``until`` to now. Marks rather than times: no history is kept."""
        since = since or Mark(self._start, 0.0)
        until = until or self.mark()
        seconds = until.at - since.at
        return (until.busy_s - since.busy_s) / (self.max_in_flight * seconds) if seconds > 0 else 0.0


_CAPS: dict[str, Cap] = {}
_LOCK = threading.Lock()


def _key(url: str) -> str:
    return url.rstrip("/")


def set_cap(url: str, max_in_flight: int, *, rate_per_s: float | None = None,
            clock: Callable[[], float] = time.monotonic) -> Cap:
    """The cap of ``url`` from now on (a new one, replacing any before it): set it before requests go there.
    ``rate_per_s``: its pace as well, shared the same way."""
    cap = Cap(max_in_flight, rate_per_s=rate_per_s, clock=clock)
    with _LOCK:
        _CAPS[_key(url)] = cap
    return cap


def cap_for(url: str) -> Cap | None:
    """The cap of ``url`` ('/' at the end or not), or None when none is set (an ordinary run)."""
    return _CAPS.get(_key(url)) if _CAPS else None


def clear_cap(url: str) -> None:
    with _LOCK:
        _CAPS.pop(_key(url), None)


def clear_caps() -> None:
    with _LOCK:
        _CAPS.clear()
