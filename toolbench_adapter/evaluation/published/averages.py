"""A published Average against its own six cells: does the mean follow, and which ± convention does the table use.

The mean of the six printed (rounded) cells either prints as the Average (it follows the rounded cells), or
lies within rounding of it (the paper averaged unrounded values), or does not (a wrong Average). The ± of an
Average is kept apart from its mean: papers print the mean of the six cell stds, the std of the six per-group
means, or the std over judge repeats of the average; a mean that follows with another ± is "mean follows, ±
differs", not a wrong Average. From the table alone the third cannot be computed, only bounded: a std over the
same repeats of an average is at most the mean of the cell stds, so a ± above that is none of the three.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from toolbench_adapter.evaluation.published.cells import PublishedCell, prints_as
from toolbench_adapter.evaluation.published.tables import PublishedRow, PublishedTable
from toolbench_adapter.evaluation.scoring.aggregates import AVERAGE
from toolbench_adapter.queryset.queries import GROUPS

FOLLOWS, ROUNDING, STD_DIFFERS, NOT_FOLLOWING = "follows", "within rounding", "mean follows, ± differs", \
    "DOES NOT FOLLOW"
MEAN_OF_STDS, STD_OF_MEANS, REPEAT_STD = ("mean of the cell stds", "std of the per-group means",
                                          "std over repeats of the average")


def _same(value: float, printed: float, decimals: int) -> bool:
    return prints_as(value, printed, decimals)


@dataclass(slots=True)  # one per row with an Average: a large table holds hundreds of thousands
class AverageCheck:
    table: PublishedTable
    row: PublishedRow
    printed: PublishedCell
    mean: float  # of the six printed cells
    std: float | None  # mean of the six cell stds (when the Average and every cell print ±)
    tolerance: float
    mark: str
    mean_mark: str = FOLLOWS  # the mean alone: FOLLOWS, ROUNDING or NOT_FOLLOWING
    std_of_means: float | None = None
    conventions: list[str] = field(default_factory=list)  # the ± conventions the printed ± agrees with
    repeat_possible: bool = False  # printed ± within the bound of a std over repeats of the average

    @property
    def digits(self) -> int:
        return min(self.printed.decimals + 2, 6)

    @property
    def off_text(self) -> str:
        text = f"{abs(self.mean - self.printed.mean):.{self.digits}f}"
        return text + (f"±{abs(self.std - self.printed.std):.{self.digits}f}" if self.std is not None else "")

    @property
    def computed_text(self) -> str:
        text = f"{self.mean:.{self.digits}f}"
        return text + (f"±{self.std:.{self.digits}f}" if self.std is not None else "")

    @property
    def verdict(self) -> str:
        if self.mark == NOT_FOLLOWING:
            return f"{NOT_FOLLOWING}  <-- off by {self.off_text}"
        mean = ("follows the six rounded cells" if self.mean_mark == FOLLOWS else
                "within rounding: not the six rounded cells, unrounded values can give it")
        if self.mark != STD_DIFFERS:
            return mean if self.std is None or self.mark == FOLLOWS else f"{mean}; ± within rounding"
        text = (f"{STD_DIFFERS} (printed: {self.printed.std:.{self.printed.decimals}f}; mean of cell stds: "
                f"{self.std:.{self.digits}f}")
        if STD_OF_MEANS in self.conventions:
            text += f"; std of the per-group means: {self.std_of_means:.{self.digits}f}, which it follows"
        return text + ")"


def check_average(table: PublishedTable, row: PublishedRow) -> AverageCheck | None:
    """None when the row has no Average or not all six groups (nothing to check it against)."""
    printed = row.cells.get(AVERAGE)
    cells = [row.cells.get(g) for g in GROUPS]
    if printed is None or any(c is None for c in cells):
        return None
    means = [c.mean for c in cells]
    mean = statistics.fmean(means)
    stds = [c.std for c in cells]
    std = statistics.fmean(stds) if printed.std is not None and all(s is not None for s in stds) else None
    # the cells were rounded (half a unit each, at most) and so was the Average (half its unit); a cell printed
    # as "65" beside "60.5" is 65.0, so the row's finest cell sets the cells' unit
    tolerance = printed.unit / 2 + min(c.unit for c in cells) / 2 + 1e-9
    mean_mark = (FOLLOWS if _same(mean, printed.mean, printed.decimals) else
                 ROUNDING if abs(mean - printed.mean) <= tolerance else NOT_FOLLOWING)
    check = AverageCheck(table, row, printed, mean, std, tolerance, mean_mark, mean_mark)
    if std is None:
        return check
    check.std_of_means = _std(means, ddof=0)
    candidates = {MEAN_OF_STDS: std, STD_OF_MEANS: check.std_of_means}
    check.conventions = [name for name, value in candidates.items() if abs(value - printed.std) <= tolerance]
    if STD_OF_MEANS not in check.conventions and abs(_std(means, ddof=1) - printed.std) <= tolerance:
        check.conventions.append(STD_OF_MEANS)  # the sample std of the means
    check.repeat_possible = printed.std <= std + tolerance
    if mean_mark == NOT_FOLLOWING:
        return check
    if MEAN_OF_STDS in check.conventions:
        exact = mean_mark == FOLLOWS and _same(std, printed.std, printed.decimals)
        check.mark = FOLLOWS if exact else ROUNDING
    else:
        check.mark = STD_DIFFERS
    return check


def _std(values: list[float], ddof: int) -> float:
    """statistics.pstdev (ddof 0) / stdev (ddof 1) in floats: the same figures to ~1e-15, without the exact
    fractions that made it the slowest step of a large table."""
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - ddof))


def check_averages(table: PublishedTable) -> list[AverageCheck]:
    return [check for row in table.rows if (check := check_average(table, row)) is not None]


def convention_text(checks: list[AverageCheck]) -> str | None:
    """Which ± convention a table's Averages use, found from its own cells."""
    rows = [c for c in checks if c.std is not None]
    if not rows:
        return None
    n = len(rows)
    counts = {name: sum(1 for c in rows if name in c.conventions) for name in (MEAN_OF_STDS, STD_OF_MEANS)}
    for name, count in counts.items():
        if count == n:
            return f"± convention: {name} ({n} of {n} rows)"
    above = sum(1 for c in rows if not c.conventions and not c.repeat_possible)
    maybe = sum(1 for c in rows if not c.conventions and c.repeat_possible)
    text = (f"± convention: no single one: {MEAN_OF_STDS} in {counts[MEAN_OF_STDS]} of {n} rows, "
            f"{STD_OF_MEANS} in {counts[STD_OF_MEANS]}")
    if maybe:
        text += f"; {maybe} could be the {REPEAT_STD} (at most the mean of the cell stds; the labels tell)"
    if above:
        text += (f"; {above} print a ± above the mean of their cell stds, which no {REPEAT_STD} can be: "
                 "none of the three")
    return text


def averages_text(tables: list[PublishedTable], *, only_flagged: bool = False) -> str:
    """Each table's Average check, every row; ``only_flagged``: only the rows whose Average is not simply the
    mean of its six rounded cells (does not follow, only within rounding, another ±), so none counted goes unnamed."""
    lines = []
    for table in tables:
        checks = check_averages(table)
        if not checks:
            if not only_flagged:
                lines.append(f"Averages of {table.title} ({table.provenance}): no printed Average with all six "
                             "cells beside it, nothing to check")
            continue
        flagged = [c for c in checks if c.mark == NOT_FOLLOWING]
        near = sum(1 for c in checks if c.mean_mark == ROUNDING)
        std_differs = sum(1 for c in checks if c.mark == STD_DIFFERS)
        summary = (f"Averages of {table.title} ({table.provenance}): {len(checks) - len(flagged)} of "
                   f"{len(checks)} printed Averages follow from their six cells ({near} only within rounding), "
                   f"{len(flagged)} do not")
        if std_differs:
            summary += f"; {std_differs} of those that follow print another ± ({STD_DIFFERS})"
        lines.append(summary)
        convention = convention_text(checks)
        if convention:
            lines.append(f"  {convention}")
        if table.meta.get("notes"):
            lines.append(f"  note: {table.meta['notes']}")
        named = [c for c in checks if c.mark != FOLLOWS or c.mean_mark != FOLLOWS] if only_flagged else checks
        for check in named:
            lines.append(f"  {check.row.name:<30} printed {check.printed.text:<10} its cells give "
                         f"{check.computed_text:<16} {check.verdict}")
        unchecked = sum(1 for r in table.rows if AVERAGE in r.cells) - len(checks)
        if unchecked:
            lines.append(f"  ({unchecked} printed Averages without all six cells beside them: not checked)")
    return "\n".join(lines) + "\n" if lines else ""


def followed_by(row: PublishedRow, unrounded: float | None) -> str | None:
    """With labels: does the printed Average follow the six rounded cells, the unrounded (reproduced) values,
    both, or neither."""
    printed = row.cells.get(AVERAGE)
    cells = [row.cells.get(g) for g in GROUPS]
    if printed is None or any(c is None for c in cells) or unrounded is None:
        return None
    rounded = statistics.fmean(c.mean for c in cells)
    by_rounded = _same(rounded, printed.mean, printed.decimals)
    by_unrounded = _same(unrounded, printed.mean, printed.decimals)
    digits = printed.decimals + 2
    figures = f"six rounded cells {rounded:.{digits}f}, unrounded values {unrounded:.{digits}f}"
    if by_rounded and by_unrounded:
        return f"Average {printed.text} follows both the six rounded cells and the unrounded values ({figures})"
    if by_rounded:
        return f"Average {printed.text} follows the six rounded cells, not the unrounded values ({figures})"
    if by_unrounded:
        return f"Average {printed.text} follows the unrounded values, not the six rounded cells ({figures})"
    return f"Average {printed.text} follows neither the six rounded cells nor the unrounded values ({figures})"
