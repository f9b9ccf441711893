"""`tba sweep --dry-run`: the cells, which are done, and an upper bound on model calls per endpoint; nothing run."""

from __future__ import annotations

from pathlib import Path

from toolbench_adapter.evaluation.judging.passrate import cost_line

from ..config.call_bound import calls_per_query
from .endpoints import max_in_flight, model_urls
from .scheduler import CellPlan
from .spec import Spec
from .state import SweepState


def print_plan(spec: Spec, sweep_dir: Path, plans: list[CellPlan], state: SweepState) -> None:
    print(f"sweep {spec.name} -> {sweep_dir}: {len(plans)} cells "
          f"({' x '.join(f'{a.name} {len(a.values)}' for a in spec.axes)}), {len(spec.judges)} judge(s)"
          + (f", every cell {spec.trials} trials" if spec.trials > 1 else "") + "; "
          f"spec {spec.path} (sha256 {spec.digest()[:12]})")
    bounds: dict[str, int] = {}
    width = max(len(p.cell.name) for p in plans)
    runs = "query runs" if spec.trials > 1 else "queries"  # a set of trials runs each query K times
    print(f"  {'cell':<{width}}  {'state':<8} {runs:>10}  model calls at most")
    for plan in plans:
        bound = plan.queries * calls_per_query(plan.cfg)
        record = state.cell(plan.cell.name)
        print(f"  {plan.cell.name:<{width}}  {record.get('state', 'pending'):<8} {plan.queries:>10}  {bound}"
              + (f"  ({record['reason']})" if record.get("reason") else ""))
        for url in model_urls(plan.cfg) or [f"{plan.cfg.backend} (in this process)"]:
            bounds[url] = bounds.get(url, 0) + bound  # several endpoints of one model: any may answer them all
    print("model calls per endpoint, at most (cells sharing a parser memo ask fewer):")
    for url, bound in bounds.items():
        cap = f", at most {max_in_flight(spec, url)} in flight" if "://" in url else ""
        print(f"  {url}: {bound}{cap}")
    for judge in plans[0].judges if plans else []:
        where = ", ".join(judge.urls) or judge.recipe.backend
        print(f"judge {judge.label}: {judge.recipe.model or judge.recipe.backend} @ {where}, "
              f"x{judge.options['evaluate_times']} per answer")
    for line in judge_cost_lines(plans):
        print(line)


def judge_cost_lines(plans: list[CellPlan]) -> list[str]:
    """Per judge, the requests the sweep's numbers multiply to (every cell's query runs x its repeats), printed
    before any cell runs (issue 41)."""
    answers = sum(plan.queries for plan in plans)
    lines = []
    for judge in plans[0].judges if plans else []:
        times = judge.options["evaluate_times"]
        lines.append(f"judge {judge.label}: " + cost_line(answers * times, f"{answers:,} answers at most ({len(plans)} "
                                                          f"cells' query runs) x {times} repeats"))
    return lines


def pilot_points(pilot: str | Path, spec: Spec) -> tuple[dict[str, dict], str]:
    """(cell name -> (group, query id) -> trials -> repeats' points, the judge whose verdicts they are) of an earlier
    sweep's folder: this spec's first judge where the pilot has it, else the pilot's first."""
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.report.sweep_matrix import build_matrix

    matrix = build_matrix(pilot)
    judges = list(dict.fromkeys(row.judge for row in matrix.rows))
    wanted = spec.judges[0].label if spec.judges else None
    judge = wanted if wanted in judges else (judges[0] if judges else None)
    points = {row.cell: row.points for row in matrix.rows if row.judge == judge and row.points}
    if not points:
        raise InputError("the pilot has no judged cell to take variances from", path=pilot, field="--pilot",
                         fix="pass the folder of a sweep whose cells ran and were judged (OUT/NAME)")
    return points, str(judge)


def print_detectable(spec: Spec, plans: list[CellPlan], *, pilot: str | Path | None = None, pass_rate: float = 0.5,
                     correlation: float = 0.0) -> None:
    """Per cell against the baseline: the smallest difference in SoPR points the sweep can detect (80% power, 5%
    two-sided, paired over the queries both run, its trials), from a stated assumption or a pilot's variances."""
    from toolbench_adapter.evaluation.scoring.trials import (
        ALPHA,
        POWER,
        assumed_variance,
        detectable_difference,
        observed_variance,
    )

    baseline = spec.baseline_cell()
    base = next((p for p in plans if p.cell.name == baseline), None)
    if base is None:
        print("smallest detectable difference: no comparison to size: " + (
            "the spec names no baseline (baseline: {AXIS: VALUE, ...} names the cell every other is compared with)"
            if baseline is None else f"the baseline {baseline} is not among the cells chosen (--cells)"))
        return
    assumed = assumed_variance(pass_rate, correlation)
    pilot_cells, judge = pilot_points(pilot, spec) if pilot else ({}, None)
    trials = spec.trials
    print(f"smallest detectable difference against the baseline {baseline}, in SoPR points ({POWER:.0%} power, "
          f"{ALPHA:.0%} two-sided, paired over the queries both cells run, {trials} trial(s) each"
          + (f"; variances from the pilot {pilot}, judge {judge}" if pilot else "") + "):")
    for plan in plans:
        if plan is base:
            continue
        shared = len(base.query_keys & plan.query_keys)
        if not shared:
            print(f"  {plan.cell.name}: no query in common with the baseline: nothing to compare")
            continue
        variance, note = assumed, ""
        if pilot:
            base_points, cell_points = pilot_cells.get(baseline), pilot_cells.get(plan.cell.name)
            observed = (observed_variance(base_points, cell_points) if base_points and cell_points else None)
            if observed is not None:
                variance = observed
            else:
                note = "; not in the pilot (or too few shared queries there): "
        size = detectable_difference(variance, shared, trials)
        print(f"  {plan.cell.name}: smallest detectable difference: {size:.1f} points ({shared} shared queries x "
              f"{trials} trial(s); {note}{variance.source})")
