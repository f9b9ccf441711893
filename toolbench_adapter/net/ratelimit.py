"""A thread-safe token bucket: one per server URL, shared by every thread (and client) of a run.

Replaces upstream's fixed ``time.sleep(2)`` before each call: calls pass at full speed until the bucket is
empty, then wait just long enough to keep the configured rate.
"""

from __future__ import annotations

import threading
import time


class RateLimiter:
    def __init__(self, rate_per_s: float | None, burst: int = 1, clock=time.monotonic, sleep=time.sleep):
        if rate_per_s is not None and rate_per_s <= 0:
            raise ValueError("rate_per_s must be positive (or None for no limit)")
        self.rate = rate_per_s
        self.burst = max(1, int(burst))
        self._tokens = float(self.burst)
        self._last = clock()
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, sleeping if needed; returns the seconds waited."""
        if self.rate is None:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= 1.0
            # a negative balance is this caller's place in the queue: later callers wait longer
            wait = -self._tokens / self.rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait


_SHARED: dict[tuple[str, float | None, int], RateLimiter] = {}
_SHARED_LOCK = threading.Lock()


def shared_limiter(url: str, rate_per_s: float | None, burst: int = 1) -> RateLimiter:
    """The one limiter of a server URL in this process (clients built separately still share it)."""
    key = (url, rate_per_s, burst)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = RateLimiter(rate_per_s, burst)
        return _SHARED[key]
