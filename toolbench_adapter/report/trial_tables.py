"""A leaderboard's figures over trials (issue 42): what tables.py adds for a row that is a set of trials, and only
then (a board without one renders as before, byte for byte: tests/test_tables_golden.py).

In the board itself a trials row's cells read ``SoPR [95% CI]`` (the mean over trials and its interval clustered by
query). Below it, per such row, a table of pass@k and pass^k for k = 1..K, the flip rate and the agent vs judge
split, per group and on the Average. The CSV gets them as columns after the others: ``trials``, ``SoPR ci95 low``,
``SoPR ci95 high``, ``pass@1`` .. ``pass@K``, ``pass^1`` .. ``pass^K``, ``flip rate``, ``agent variance share``,
``agent SD``, ``judge SD`` (the Average), then the same per group (``pass@2 I1 Inst``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from toolbench_adapter.evaluation.scoring.trials import OVER_TRIALS, TrialStats
from toolbench_adapter.queryset.queries import GROUP_LABELS

COLUMNS = list(GROUP_LABELS)
AVERAGE = "Average"
MISSING = "–"


@dataclass
class RowTrials:
    """One row's figures over trials on one board (its scoring mode): per group, and the Average."""

    groups: dict[str, TrialStats]
    average: TrialStats | None

    @property
    def trials(self) -> int:
        return max([s.trials for s in self.groups.values()] + [self.average.trials if self.average else 0])

    @property
    def repeats(self) -> int:
        return max([s.repeats for s in self.groups.values()] or [0])

    def cell(self, group: str) -> str:
        stats = self.groups.get(group)
        return stats.text() if stats is not None else MISSING


def _number(value: float | None) -> str:
    return MISSING if value is None else f"{value:.1f}"


def _share(stats: TrialStats | None) -> str:
    share = stats.variance.agent_share if stats is not None else None
    return MISSING if share is None else f"{100 * share:.0f}% / {100 * (1 - share):.0f}%"


def measures(figures: RowTrials) -> list[tuple[str, list[str]]]:
    """(measure, a cell per group and the Average) for the table below the board."""
    columns = [figures.groups.get(g) for g in COLUMNS] + [figures.average]
    rows = []
    for k in range(1, figures.trials + 1):
        rows.append((f"pass@{k}", [_number(s.pass_at.get(k)) if s else MISSING for s in columns]))
    for k in range(1, figures.trials + 1):
        rows.append((f"pass^{k}", [_number(s.pass_hat.get(k)) if s else MISSING for s in columns]))
    rows.append(("flip rate", [_number(s.flip_rate) if s else MISSING for s in columns]))
    rows.append(("agent / judge variance", [_share(s) for s in columns]))
    return rows


def definition(board) -> str:
    """The line that says what a trials row's cells and the tables below are: the same words everywhere."""
    rows = "; ".join(f"{name}: {figures.trials} trials, cells SoPR [95% CI]" for name, figures in board.trials.items())
    return f"{rows}. {OVER_TRIALS}."


def markdown(board) -> list[str]:
    lines = ["", definition(board)]
    for row in board.rows:
        figures = board.trials.get(row.name)
        if figures is None:
            continue
        head = [f"{row.name}: {figures.trials} trials, {figures.repeats} judge repeat(s) each"] + \
            [GROUP_LABELS[g] for g in COLUMNS] + [AVERAGE]
        lines += ["", "| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join([name, *cells]) + " |" for name, cells in measures(figures)]
        average = figures.average
        if average is not None:
            lines += ["", f"{row.name}, Average: {average.variance.text()}"]
    return lines


def latex(board, escape) -> list[str]:
    """A second tabular per trials row (the same measures as the Markdown), inside the board's table."""
    out = []
    for row in board.rows:
        figures = board.trials.get(row.name)
        if figures is None:
            continue
        head = [f"{row.name}: {figures.trials} trials"] + [GROUP_LABELS[g] for g in COLUMNS] + [AVERAGE]
        out += [r"\medskip", r"\begin{tabular}{l" + "c" * (len(head) - 1) + "}", r"\toprule",
                " & ".join(escape(h) for h in head) + r" \\", r"\midrule"]
        out += [" & ".join(escape(c) for c in [name, *cells]) + r" \\" for name, cells in measures(figures)]
        out += [r"\bottomrule", r"\end{tabular}"]
    return out


def csv_header(board) -> list[str]:
    k = max((f.trials for f in board.trials.values()), default=0)
    per = ["SoPR ci95 low", "SoPR ci95 high", *[f"pass@{i}" for i in range(1, k + 1)],
           *[f"pass^{i}" for i in range(1, k + 1)], "flip rate"]
    return (["trials", *per, "agent variance share", "agent SD", "judge SD"]
            + [f"{name} {GROUP_LABELS[g]}" for g in COLUMNS for name in per])


def csv_cells(board, row) -> list[str]:
    figures = board.trials.get(row.name)
    width = len(csv_header(board))
    if figures is None:
        return [""] * width
    k = max(f.trials for f in board.trials.values())

    def per(stats: TrialStats | None) -> list[str]:
        if stats is None:
            return [""] * (3 + 2 * k)
        return [_plain(stats.low), _plain(stats.high), *[_plain(stats.pass_at.get(i)) for i in range(1, k + 1)],
                *[_plain(stats.pass_hat.get(i)) for i in range(1, k + 1)], _plain(stats.flip_rate)]

    average = figures.average
    variance = average.variance if average is not None else None
    share = variance.agent_share if variance is not None else None
    sds = [_plain(None if v is None else 100 * math.sqrt(v)) for v in
           ((variance.agent, variance.judge) if variance is not None else (None, None))]
    cells = [str(figures.trials), *per(average), _plain(None if share is None else 100 * share), *sds]
    for group in COLUMNS:
        cells += per(figures.groups.get(group))
    return cells


def _plain(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"
