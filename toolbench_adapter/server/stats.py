"""Request counters and latency percentiles by answer source, and who made the answers (provenance.py), for
/stats.

Two writers: handle() in the thread pool (misses, errors, a hit on a file not parsed yet) records under a
lock; the event loop's hit path records without one, into counters only that one thread writes (the GIL
makes each step atomic, and no other thread touches them). /stats adds the two up."""

from __future__ import annotations

import threading
from collections import deque

WINDOW = 20000  # latencies kept per source: recent enough, bounded memory
HIT_SOURCES = ("cache", "cache_simulated")


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(fraction * (len(sorted_values) - 1))))
    return sorted_values[index]


class ServerStats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}  # thread-pool writers, under the lock
        self._latencies: dict[str, deque[float]] = {}
        self._loop_counts: dict[str, int] = {}  # the event loop's own, no lock
        self._loop_latencies: dict[str, deque[float]] = {}
        self._made_by: dict[str, int] = {}  # simulator -> answers it made that were served (misses and hits)
        self._loop_made_by: dict[str, int] = {}

    def record(self, source: str, latency_s: float, made_by: str | None = None) -> None:
        """From any thread."""
        with self._lock:
            self._counts[source] = self._counts.get(source, 0) + 1
            if made_by is not None:
                self._made_by[made_by] = self._made_by.get(made_by, 0) + 1
            latencies = self._latencies.get(source)
            if latencies is None:
                latencies = self._latencies[source] = deque(maxlen=WINDOW)
            latencies.append(latency_s)

    def record_on_loop(self, source: str, latency_s: float, made_by: str | None = None) -> None:
        """From the event loop's thread only: two dict operations and an append, no lock."""
        counts = self._loop_counts
        counts[source] = counts.get(source, 0) + 1
        if made_by is not None:
            self._loop_made_by[made_by] = self._loop_made_by.get(made_by, 0) + 1
        latencies = self._loop_latencies.get(source)
        if latencies is None:
            latencies = self._loop_latencies[source] = deque(maxlen=WINDOW)
        latencies.append(latency_s)

    def snapshot(self) -> dict:
        with self._lock:
            counts = dict(self._counts)
            latencies = {k: list(v) for k, v in self._latencies.items()}
            made_by = dict(self._made_by)
        for source, count in list(self._loop_counts.items()):  # copies in C: nothing runs in between
            counts[source] = counts.get(source, 0) + count
        for maker, count in list(self._loop_made_by.items()):
            made_by[maker] = made_by.get(maker, 0) + count
        for source, values in list(self._loop_latencies.items()):
            latencies.setdefault(source, []).extend(list(values))
        latencies = {k: sorted(v) for k, v in latencies.items()}
        by_source = {
            source: {"count": counts[source],
                     "p50_ms": round(percentile(values, 0.50) * 1000, 3),
                     "p90_ms": round(percentile(values, 0.90) * 1000, 3),
                     "p99_ms": round(percentile(values, 0.99) * 1000, 3)}
            for source, values in sorted(latencies.items())
        }
        hits = sum(counts.get(s, 0) for s in HIT_SOURCES)
        misses = sum(v for k, v in counts.items() if k.startswith("simulator:"))
        # a hit on an answer a simulator of this project made (its mark, the schema simulator's answer by content,
        # the _simulated mirror: provenance.py) is a simulated answer replayed, not upstream's cache; made_by
        # counts every answer served by who made it (comparability.py reads both)
        return {"requests": sum(counts.values()), "hits": hits, "simulated_hits": counts.get("cache_simulated", 0),
                "misses": misses, "made_by": dict(sorted(made_by.items())), "by_source": by_source}
