"""Paired statistics for two systems scored on the same queries (e.g. two parsers of one model).

- ``paired_bootstrap``: the mean per-query difference (b - a) and its percentile bootstrap interval,
  resampling queries with replacement from a seeded generator (the same inputs give the same interval).
- ``mcnemar_exact``: the two-sided exact McNemar test on the discordant pairs, i.e. a binomial test of
  b_only successes out of (a_only + b_only) at p = 1/2. Exact, so it stays right on the small counts
  that parser flips usually are.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

RESAMPLES = 10_000
SEED = 0
CHUNK = 1_000  # resamples drawn at a time: memory stays bounded on a 765-query set


@dataclass(frozen=True)
class PairedDifference:
    mean: float  # mean of (b - a) over the queries
    low: float
    high: float
    n: int
    level: float = 0.95


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED,
                     level: float = 0.95) -> PairedDifference:
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length ({len(a)} vs {len(b)})")
    if not a:
        raise ValueError("no paired queries")
    import numpy as np  # here: a sweep's matrix without a baseline (or tba table) never pays numpy's import

    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(diffs)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        means[start:start + size] = diffs[rng.integers(0, n, size=(size, n))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return PairedDifference(float(diffs.mean()), float(low), float(high), n, level)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact p-value from the discordant counts (queries only a passes, only b passes)."""
    if a_only < 0 or b_only < 0:
        raise ValueError("discordant counts cannot be negative")
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(a_only, b_only) + 1))
    return min(1.0, 2 * tail / 2**n)
