"""Request counters and latency percentiles by answer source, for /stats."""

from __future__ import annotations

import threading
from collections import Counter, deque

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
        self._counts: Counter[str] = Counter()
        self._latencies: dict[str, deque[float]] = {}

    def record(self, source: str, latency_s: float) -> None:
        with self._lock:
            self._counts[source] += 1
            self._latencies.setdefault(source, deque(maxlen=WINDOW)).append(latency_s)

    def snapshot(self) -> dict:
        with self._lock:
            counts = dict(self._counts)
            latencies = {k: sorted(v) for k, v in self._latencies.items()}
        by_source = {
            source: {"count": counts[source],
                     "p50_ms": round(percentile(values, 0.50) * 1000, 3),
                     "p90_ms": round(percentile(values, 0.90) * 1000, 3),
                     "p99_ms": round(percentile(values, 0.99) * 1000, 3)}
            for source, values in sorted(latencies.items())
        }
        hits = sum(counts.get(s, 0) for s in HIT_SOURCES)
        misses = sum(v for k, v in counts.items() if k.startswith("simulator:"))
        return {"requests": sum(counts.values()), "hits": hits, "misses": misses, "by_source": by_source}
