"""The queries a run selects: groups, ids, a limit per group, a shard."""

from __future__ import annotations

from toolbench_adapter.errors import InputError
from toolbench_adapter.queryset.queries import Query, QuerySet

from .run_config import RunConfig


def select_queries(cfg: RunConfig, queries: QuerySet | None = None) -> list[Query]:
    """``queries``: the data root already read (a run's identity check reads its groups too), else cfg.stb_root."""
    queries = queries if queries is not None else QuerySet(cfg.stb_root)
    groups = cfg.groups or queries.available_groups()
    for group in groups:
        queries.check_group(group)
    selected: list[Query] = []
    wanted = set(cfg.query_ids)
    for group in groups:
        group_queries = [q for q in queries.load(group) if not wanted or q.query_id in wanted]
        selected.extend(group_queries[: cfg.limit] if cfg.limit else group_queries)
    if wanted:
        missing = wanted - {q.query_id for q in selected}
        if missing:
            raise InputError(f"query id(s) {sorted(missing)} are not evaluated queries of {', '.join(groups)}",
                             field="query_ids")
    shard = cfg.shard_parts()
    if shard:
        index, count = shard
        selected = [q for position, q in enumerate(selected) if position % count == index - 1]
    return selected
