"""Resume: the queries of a run still to do (those without a whole answer file), and the queries.jsonl lines of
finished queries mended where a kill lost them."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path

from toolbench_adapter.evaluation.scoring.counts import answer_flags
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.runs.folder import ERRORS, QUERY_STATS, answer_path, is_finished

from ..config import RunConfig, select_queries
from ..failures import FINISHED_FIELDS


def pending(cfg: RunConfig, run_dir: Path, append: Callable[[str, dict], None],
            selected: list[Query] | None = None) -> tuple[list[Query], int]:
    """(queries to run, how many selected ones are done); the lost stats lines of done ones appended first.
    ``selected``: the queries already selected (the identity check read them), else select_queries(cfg)."""
    for name in (QUERY_STATS, ERRORS):  # an append cut short (a full disk, a kill) would swallow the next line
        drop_torn_tail(run_dir / name)
    selected = select_queries(cfg) if selected is None else selected
    todo = [q for q in selected if not is_finished(answer_path(run_dir, q.group, q.query_id, cfg.method))]
    pending_keys = {(q.group, q.query_id) for q in todo}
    recover_stats(cfg, run_dir, [q for q in selected if (q.group, q.query_id) not in pending_keys], append)
    return todo, len(selected) - len(todo)


def drop_torn_tail(path: Path) -> None:
    """Cut a last line without its newline (half a record: no reader can use it), so the next append starts a
    line of its own. Whole lines are kept as they are."""
    try:
        data = path.read_bytes()  # recover_stats reads the whole file anyway
    except FileNotFoundError:
        return
    if data and not data.endswith(b"\n"):
        with open(path, "rb+") as handle:
            handle.truncate(data.rfind(b"\n") + 1)


def recover_stats(cfg: RunConfig, run_dir: Path, finished: list[Query], append: Callable[[str, dict], None]) -> None:
    """A finished answer file whose queries.jsonl line was lost (the process killed between the two
    writes) gets its line back from the file itself, marked ``recovered``: the totals never undercount."""
    path = run_dir / QUERY_STATS
    known: set[tuple] = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                known.add((record["group"], record["query_id"]))
    for query in finished:
        if (query.group, query.query_id) in known:
            continue
        data = json.loads(answer_path(run_dir, query.group, query.query_id, cfg.method).read_text(encoding="utf-8"))
        generation = data["answer_generation"]
        append(QUERY_STATS, {
            "group": query.group, "query_id": query.query_id, "method": cfg.method,
            "query_count": generation.get("query_count", 0), "total_tokens": generation.get("total_tokens", 0),
            "model_seconds": 0.0, "env_seconds": 0.0, "wall_seconds": 0.0, **answer_flags(data),
            "recovered": True, **FINISHED_FIELDS})
