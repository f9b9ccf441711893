"""An upper bound on one query's model calls under a run's settings: what `tba sweep --dry-run` and a set of
trials (`tba run --trials K`: K x this, paid requests included) say a run may cost before it starts."""

from __future__ import annotations

from toolbench_adapter.structured.policy import reask_limit

from .run_config import RunConfig


def calls_per_query(cfg: RunConfig) -> int:
    """An upper bound on one query's model calls. DFSDT stops at max_query_count. CoT@N makes at most N chains of
    max_step turns, each asked again at most N times by --on-invalid reask:N, and re-asks stop at max_query_count
    (runners/search/cot.py): the smaller of the two bounds."""
    if not cfg.method.startswith("CoT@"):
        return cfg.max_query_count
    try:
        turns = int(cfg.method.split("@", 1)[1]) * cfg.max_step
    except ValueError:
        return cfg.max_query_count
    reasks = reask_limit(cfg.on_invalid)
    return turns if not reasks else min(turns * (1 + reasks), turns + cfg.max_query_count)
