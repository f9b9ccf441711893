"""`tba sweep --dry-run`: the cells, which are done, and an upper bound on model calls per endpoint; nothing run."""

from __future__ import annotations

from pathlib import Path

from ..config.call_bound import calls_per_query
from .endpoints import max_in_flight, model_urls
from .scheduler import CellPlan
from .spec import Spec
from .state import SweepState


def print_plan(spec: Spec, sweep_dir: Path, plans: list[CellPlan], state: SweepState) -> None:
    print(f"sweep {spec.name} -> {sweep_dir}: {len(plans)} cells "
          f"({' x '.join(f'{a.name} {len(a.values)}' for a in spec.axes)}), {len(spec.judges)} judge(s); "
          f"spec {spec.path} (sha256 {spec.digest()[:12]})")
    bounds: dict[str, int] = {}
    width = max(len(p.cell.name) for p in plans)
    print(f"  {'cell':<{width}}  {'state':<8} {'queries':>7}  model calls at most")
    for plan in plans:
        bound = plan.queries * calls_per_query(plan.cfg)
        record = state.cell(plan.cell.name)
        print(f"  {plan.cell.name:<{width}}  {record.get('state', 'pending'):<8} {plan.queries:>7}  {bound}"
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
    print("nothing run (--dry-run)")
