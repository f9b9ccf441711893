"""`tba sweep --until-settled --max-trials K` (issue 42): after the sweep, more trials only for the cells whose
comparison with the baseline is not settled, round after round, within the budget.

Each round reads the matrix (the first judge's rows): for a cell not settled, the trials at which its observed
difference becomes detectable (80% power, 5% two-sided, from the two cells' observed variances:
toolbench_adapter/evaluation/scoring/trials.py), at least one more than it has and at most --max-trials; where more
trials alone would not do (the queries' own spread is too large), --max-trials; and the baseline, half of every
comparison, to the most any of them grows to. Those cells grow (their sets of trials
resume: only the new trials run) and are judged again (cached verdicts reused); the round ends with a new matrix. It
stops when every comparison is settled, when no cell can grow within the budget, or after --max-trials rounds, and
says what it spent: the query runs and model calls the added trials made."""

from __future__ import annotations

from dataclasses import replace

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.scoring.trials import needed_for, observed_variance
from toolbench_adapter.report.sweep_matrix import Matrix
from toolbench_adapter.runs.trial_set import is_trial_set, read_trials

from .scheduler import CellPlan


def check(trials: int, max_trials: int | None, has_baseline: bool) -> None:
    """--until-settled can run: a set of trials per cell already (a verdict needs trial-to-trial variance), a budget
    above it, a baseline to compare with (InputError, exit 2, before anything runs)."""
    if not has_baseline:
        raise InputError("--until-settled settles comparisons with the baseline, and the spec names none",
                         field="--until-settled", fix="add baseline: {AXIS: VALUE, ...} to the spec")
    if trials < 2:
        raise InputError("--until-settled adds trials to sets of trials: the cells run one trial each",
                         field="--until-settled", fix="start with trials: 2 (or --trials 2) or more")
    if max_trials is None or max_trials <= trials:
        raise InputError(f"--max-trials must be above the cells' {trials} trials", field="--max-trials",
                         fix=f"pass --max-trials {max(2 * trials, trials + 1)} (the budget: trials per cell at most)")


def targets(matrix: Matrix, max_trials: int) -> dict[str, int]:
    """cell -> the trials it grows to this round (only cells not settled against the baseline, first judge)."""
    judges = list(dict.fromkeys(row.judge for row in matrix.rows))
    rows = [row for row in matrix.rows if judges and row.judge == judges[0]]
    base = next((row for row in rows if row.baseline), None)
    grow: dict[str, int] = {}
    for row in rows:
        if base is None or row is base or row.paired is None or row.verdict == "settled":
            continue
        shared = [q for q in base.points if q in row.points]
        variance = observed_variance({q: base.points[q] for q in shared}, {q: row.points[q] for q in shared})
        trials = min(base.trials, row.trials)
        needed = needed_for(row.paired.mean * 100, variance, row.paired.n, trials) if variance else None
        wanted = needed.trials if needed is not None and needed.trials is not None else max_trials
        target = min(max_trials, max(row.trials + 1, wanted))
        if target > row.trials:
            grow[row.cell] = target
    # a comparison pairs the cell with the baseline: the baseline's trial-to-trial spread is half of it, so the
    # baseline grows with the most any unsettled cell grows to
    if grow and base is not None and base.trials < max(grow.values()):
        grow[base.cell] = max(grow.values())
    return grow


def grown(plans: list[CellPlan], grow: dict[str, int]) -> list[CellPlan]:
    """The plans of the cells that grow, with their new trials (their queries x the trials for the bar)."""
    return [replace(plan, cfg=replace(plan.cfg, trials=grow[plan.cell.name]),
                    queries=len(plan.query_keys) * grow[plan.cell.name])
            for plan in plans if plan.cell.name in grow]


def spent(plans: list[CellPlan]) -> tuple[int, int]:
    """(query runs, model calls) the cells' sets hold now: read before and after a round, their difference is what
    it spent."""
    runs = calls = 0
    for plan in plans:
        if is_trial_set(plan.cfg.run_dir):
            totals = read_trials(plan.cfg.run_dir).get("totals") or {}
            runs += int(totals.get("queries") or 0)
            calls += int(totals.get("model_calls") or 0)
    return runs, calls
