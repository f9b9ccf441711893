"""The layout of a run folder, in one place: what `tba run` writes and every reader finds there.

``{run}/``: ``manifest.json`` (settings, sessions, totals), ``{group}/{qid}_{method}.json`` (answer files:
a query that has one is finished), ``steps/{group}/{qid}_{method}.jsonl`` (each query's step records) joined
into ``steps.jsonl``, ``queries.jsonl`` (one line per query: outcome and cost), ``errors.jsonl`` (one line per
infrastructure failure) and ``failed/{group}/{qid}_{method}.json`` (the partial tree of an infra-failed query).

The run (runners/execution), evaluation, merge, fan-out, replay and the report read these names from here;
none of them imports another's driver to learn them.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from toolbench_adapter.answers.read import iter_answer_files, load_answer, split_file_name
from toolbench_adapter.answers.write import answer_path
from toolbench_adapter.evaluation.scoring.counts import Counts, answer_flags, count, count_by_group
from toolbench_adapter.files.fileio import write_text_atomic
from toolbench_adapter.files.folder_files import files_under
from toolbench_adapter.outcomes import FINISHED
from toolbench_adapter.queryset.queries import is_group_name
from toolbench_adapter.structured.rates import total_stats

MANIFEST = "manifest.json"
STEPS = "steps.jsonl"
STEPS_DIR = "steps"
QUERY_STATS = "queries.jsonl"  # one line per query: outcome (outcomes.py), answer flags and cost
ERRORS = "errors.jsonl"
FAILED_DIR = "failed"  # failed/{group}/{query_id}_{method}.json: the partial tree of an infra-failed query
FANOUT = "fanout.json"  # at the root of a parser fan-out set (one run folder per parser): variants, call counts

__all__ = ["ERRORS", "FAILED_DIR", "FANOUT", "MANIFEST", "QUERY_STATS", "STEPS", "STEPS_DIR", "answer_path", "collect_steps",
           "failed_path", "is_finished", "read_query_lines", "remove_empty_dirs", "run_counts", "run_records",
           "steps_path", "summarize"]


def failed_path(run_dir: str | Path, group: str, query_id: int, method: str) -> Path:
    return Path(run_dir) / FAILED_DIR / group / f"{query_id}_{method}.json"


def steps_path(run_dir: str | Path, group: str, query_id: int, method: str) -> Path:
    return Path(run_dir) / STEPS_DIR / group / f"{query_id}_{method}.jsonl"


def is_finished(path: Path) -> bool:
    """An answer file counts as finished when it parses: files are written whole or not at all."""
    try:
        with open(path, encoding="utf-8") as handle:
            return "answer_generation" in json.load(handle)
    except (OSError, ValueError):
        return False


def read_query_lines(path: str | Path) -> list[dict]:
    """``queries.jsonl``: the latest line per query (a resumed run appends; a redone query counts once, as what
    it is now); a line cut by a kill is skipped (that query is re-run and logged again)."""
    latest: dict[tuple, dict] = {}
    path = Path(path)
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, KeyError, TypeError):
                record = json.loads(line)
                latest[(str(record["group"]), str(record["query_id"]))] = record
    return list(latest.values())


def run_records(run_dir: str | Path, answer_files: Iterable[tuple[str, str, Path]] = ()) -> list[dict]:
    """One record per query of a run folder: its ``queries.jsonl`` lines, plus a finished record for each
    answer file ``(group, query_id, path)`` without a line (a folder of answer files only, or a line lost)."""
    records = read_query_lines(Path(run_dir) / QUERY_STATS)
    known = {(str(r["group"]), str(r["query_id"])) for r in records}
    for group, query_id, path in answer_files:
        if (group, str(query_id)) not in known:
            data = load_answer(path, group=group).data  # a malformed file is named (InputError)
            records.append({"group": group, "query_id": query_id, "outcome": FINISHED, **answer_flags(data)})
    return records


def run_counts(run_dir: str | Path) -> dict[str, Counts]:
    """group -> Counts of a run folder: its queries.jsonl lines, and its answer files ``{group}/{qid}_*.json``
    that have none."""
    run_dir = Path(run_dir)
    answers = [(folder.name, split_file_name(path.name)[0], path)
               for folder in sorted(p for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name))
               for path in iter_answer_files(folder)]
    return count_by_group(run_records(run_dir, answers))


def summarize(run_dir: Path, method: str) -> dict:
    """Totals over every query stats line of the run (all sessions), latest line per query wins: a query
    that failed and was redone counts once, as what it is now. valid / answered / win count finished
    queries only; model calls and tokens count every query's latest attempt (what it cost)."""
    records = read_query_lines(Path(run_dir) / QUERY_STATS)
    model_s = [r["model_seconds"] / r["query_count"] for r in records if r.get("query_count")]
    counts = count(records)  # queries, finished, infra failures, valid, answered, win, context length: evaluation/scoring/counts.py
    agents = Counter(r["agent_outcome"] for r in records if r.get("agent_outcome") and r.get("outcome") == "finished")
    return {
        # an outside agent's finished queries by how they ended (runners/outside/drive.py: finish, no_finish,
        # timeout, call_cap); absent for a model's run
        **({"agent_outcomes": dict(sorted(agents.items()))} if agents else {}),
        **counts.as_dict(),
        "context_length": counts.context_length,
        **total_stats(records),  # model turns, valid ones, re-asks
        "model_calls": sum(r["query_count"] for r in records),
        "total_tokens": sum(r["total_tokens"] for r in records),
        # issue 42 (runs/cost.py reads them per query): lines written before count 0, latencies only where recorded
        "prompt_tokens": sum(r.get("prompt_tokens", 0) for r in records),
        "completion_tokens": sum(r.get("completion_tokens", 0) for r in records),
        **latency_percentiles([x for r in records for x in r.get("model_latencies_s") or []]),
        "median_model_seconds_per_call": round(statistics.median(model_s), 4) if model_s else None,
        "median_query_wall_seconds": round(statistics.median([r["wall_seconds"] for r in records]), 4)
        if records else None,
    }


def latency_percentiles(latencies: list[float]) -> dict:
    """Model latency p50 and p95 over every model call (seconds); None when none was recorded."""
    if not latencies:
        return {"model_latency_p50_s": None, "model_latency_p95_s": None}
    import numpy as np  # here, not at the top: every command reads run folders, few need a percentile

    p50, p95 = np.percentile(latencies, [50, 95])
    return {"model_latency_p50_s": round(float(p50), 4), "model_latency_p95_s": round(float(p95), 4)}


def collect_steps(run_dir: Path, skip: set[Path] | frozenset = frozenset()) -> Path:
    """steps.jsonl at the run root: every per-query step file joined (but those in ``skip``), in a stable order."""
    target = Path(run_dir) / STEPS
    lines: list[str] = []
    for path in files_under(Path(run_dir) / STEPS_DIR, "*/*.jsonl", recursive=False):
        if path in skip:
            continue
        lines.extend(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    write_text_atomic(target, "".join(line + "\n" for line in lines))
    return target


def remove_empty_dirs(root: Path) -> None:
    """``root`` and its subfolders, where empty (redone failures leave their folders under failed/ behind)."""
    for folder in sorted(root.glob("*"), reverse=True) + [root]:
        with contextlib.suppress(OSError):  # not empty, or not there
            folder.rmdir()
