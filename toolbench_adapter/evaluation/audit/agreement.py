"""Agreement of a judge with released labels: Cohen's kappa and the SoPR shift, each with a bootstrap interval.

The unit of resampling is an answer (a query of one label file), with all its repeats: repeats of one answer
are not independent draws, so resampling pairs would make the interval too narrow. Resamples are drawn within
each label file (a stratum), so every resample keeps each file's size; the interval is the percentile one.
Kappa is ``n/a`` when the released side holds one label only: any judge then gets kappa 0 (or undefined when it
says the same label), so kappa cannot tell a judge from chance there; the reason is kept with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from toolbench_adapter.evaluation.labels import Label

CATEGORIES = (Label.SOLVED, Label.UNSOLVED, Label.UNSURE)
RESAMPLES = 1000
SEED = 0
LEVEL = 0.95
_INDEX = {label: i for i, label in enumerate(CATEGORIES)}


@dataclass(frozen=True)
class Unit:
    """One answer: its released and our label per repeat; ``by_rule``: no judge was asked (no Finish, …)."""

    released: dict[int, Label]
    ours: dict[int, Label]
    by_rule: bool = False

    def pairs(self) -> list[tuple[Label, Label]]:
        return [(self.released[r], self.ours[r]) for r in sorted(self.ours) if r in self.released]

    def counts(self) -> np.ndarray:
        """The 3x3 matrix (released, ours) of the pairs the judge decided with a verdict on both sides."""
        matrix = np.zeros((3, 3), dtype=np.int64)
        if not self.by_rule:
            for released, ours in self.pairs():
                if released in _INDEX and ours in _INDEX:
                    matrix[_INDEX[released], _INDEX[ours]] += 1
        return matrix

    def points(self, side: dict[int, Label]) -> float:
        """Mean pass-rate points over the repeats with a verdict; NaN when none has one."""
        values = [label.points for label in side.values() if label is not Label.ERROR]
        return float(np.mean(values)) if values else float("nan")


@dataclass(frozen=True)
class Kappa:
    value: float | None
    why: str | None = None  # why ``value`` is None
    only: str | None = None  # the one label our judge gave, when it gave one only (said beside a value)

    def text(self) -> str:
        return f"n/a ({self.why})" if self.value is None else f"{self.value:.3f}"


def kappa_of(matrix: np.ndarray) -> Kappa:
    """Cohen's kappa of a (released x ours) count matrix, or n/a with the reason."""
    n = int(matrix.sum())
    if n == 0:
        return Kappa(None, "no pair decided by the judge")
    rows, cols = matrix.sum(axis=1), matrix.sum(axis=0)
    ours_only = CATEGORIES[int(np.argmax(cols))].value if np.count_nonzero(cols) == 1 else None
    if np.count_nonzero(rows) == 1:
        label = CATEGORIES[int(np.argmax(rows))].value
        return Kappa(None, f"the released labels are all {label} on the {n} pairs the judge decided: kappa cannot "
                     "tell a judge from chance there", ours_only)
    p_o = float(np.trace(matrix)) / n
    p_e = float((rows * cols).sum()) / (n * n)
    return Kappa((p_o - p_e) / (1 - p_e), None, ours_only)


def _kappas(totals: np.ndarray) -> np.ndarray:
    """Kappa of each stacked (R, 3, 3) matrix; NaN where ``kappa_of`` says n/a."""
    n = totals.sum(axis=(1, 2)).astype(float)
    rows, cols = totals.sum(axis=2), totals.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = np.trace(totals, axis1=1, axis2=2) / n
        p_e = (rows * cols).sum(axis=1) / (n * n)
        values = (p_o - p_e) / (1 - p_e)
    values[(n == 0) | (np.count_nonzero(rows, axis=1) <= 1)] = np.nan
    return values


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    resamples: int
    undefined: int = 0  # resamples with no value (kappa n/a): left out of the percentiles

    def text(self, fmt: str = "{:.3f}", *, note: bool = True) -> str:
        """``note``: say how many resamples had no value (kappa n/a there), when any had none."""
        if self.low is None or self.high is None:
            return "[n/a]"
        said = f", {self.undefined} of {self.resamples} resamples n/a" if note and self.undefined else ""
        return f"[{fmt.format(self.low)}, {fmt.format(self.high)}{said}]"


def _percentiles(values: np.ndarray, resamples: int, level: float = LEVEL) -> Interval:
    kept = values[~np.isnan(values)]
    if kept.size == 0:
        return Interval(None, None, resamples, resamples)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(kept, [tail, 100 - tail])
    return Interval(float(low), float(high), resamples, int(resamples - kept.size))


CHUNK_DRAWS = 1 << 21  # answer indices drawn at once: ~16 MiB a chunk, whatever the resamples and the answers


def _draws(strata: Sequence[Sequence[Unit]], resamples: int, seed: int):
    """Per stratum in order, its resamples in chunks of rows: (stratum index, first row, an (r, n) array of the
    indices each resample draws). Seeded, and the same draws as one (R, n) array per stratum, in memory that
    does not grow with ``resamples`` (--resamples 999999999999 was a MemoryError after every judge call)."""
    rng = np.random.default_rng(seed)
    for index, units in enumerate(strata):
        size = len(units)
        step = max(1, CHUNK_DRAWS // max(1, size))
        for start in range(0, resamples, step) if size else ():
            yield index, start, rng.integers(0, size, size=(min(step, resamples - start), size))


def kappa_interval(strata: Sequence[Sequence[Unit]], *, resamples: int = RESAMPLES, seed: int = SEED) -> Interval:
    totals = np.zeros((resamples, 9), dtype=np.int64)
    counts = [np.stack([unit.counts().ravel() for unit in units]) if units else None for units in strata]
    for index, start, draw in _draws(strata, resamples, seed):
        rows, size = draw.shape
        # how often each resample drew each answer, then its summed matrix: no (r, n, 3, 3) array
        drawn = np.bincount((draw + np.arange(rows)[:, None] * size).ravel(), minlength=rows * size)
        totals[start:start + rows] += drawn.reshape(rows, size) @ counts[index]
    return _percentiles(_kappas(totals.reshape(resamples, 3, 3)), resamples)


@dataclass(frozen=True)
class Shift:
    """SoPR ours minus released, in points, per stratum and on their plain mean (the leaderboard's Average)."""

    per_stratum: list[tuple[float, Interval]]
    average: tuple[float, Interval]


def sopr_shift(strata: Sequence[Sequence[Unit]], points: Sequence[float], *, resamples: int = RESAMPLES,
               seed: int = SEED) -> Shift:
    """``points``: each stratum's shift as its SoPR columns print it (ours.mean - released.mean); the interval
    resamples answers, each scored by its mean over repeats (the same number when no judgement failed)."""
    # an answer with no verdict on a side (every judgement failed) has no shift: left out, as sopr() leaves it out
    kept = [[u for u in units if not np.isnan(u.points(u.ours) - u.points(u.released))] for units in strata]
    diffs = [np.array([unit.points(unit.ours) - unit.points(unit.released) for unit in units], dtype=float) * 100
             for units in kept]
    shifts = [np.full(resamples, np.nan) for _ in kept]
    for index, start, draw in _draws(kept, resamples, seed):
        shifts[index][start:start + len(draw)] = diffs[index][draw].mean(axis=1)
    per = [(point, _percentiles(shifted, resamples)) for shifted, point in zip(shifts, points, strict=True)]
    average = np.mean(np.stack(shifts), axis=0) if shifts else np.full(resamples, np.nan)
    return Shift(per, (float(np.mean(points)) if points else float("nan"), _percentiles(average, resamples)))
