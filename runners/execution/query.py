"""One query, run and written: its search (the run's method, search/), then its files in the run folder (step
records, then the answer file or the failed/ tree, each atomically: toolbench_adapter/runs/folder.py).

A QueryRunner is what an executor needs to run a query anywhere: the driver's threads share the driver's, a
Ray worker builds its own from the run's config (execution/executors.py). What is shared across queries (the
queries.jsonl and errors.jsonl lines, the steps.jsonl appends) goes through the two callbacks it is given:
the driver passes its own; a Ray worker passes none (the driver records what the worker returns)."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.env import ToolEnv
from toolbench_adapter.evaluation.scoring.counts import answer_flags
from toolbench_adapter.files.fileio import write_json_atomic, write_text_atomic
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.runs.call_record import encode_record
from toolbench_adapter.runs.folder import answer_path, failed_path, steps_path
from toolbench_adapter.structured.rates import query_stats

from ..failures import FINISHED_FIELDS, HARNESS_ERROR, InfraFailure
from ..search.agent import Agent, QueryContext
from ..search.tree import Node, release
from .preflight import RunSetup


@dataclass
class QueryOutcome:
    group: str
    query_id: int
    answered: bool = False
    valid: bool = False
    failure: InfraFailure | None = None  # None: finished
    stats: dict = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.failure is None


RecordOutcome = Callable[[dict, "InfraFailure | None"], None]


class QueryRunner:
    """Runs one query of the run and writes its files; ``record_outcome(stats, failure)`` gets the query's
    queries.jsonl line as soon as its file is written, ``publish_steps(text)`` its step records (None: the
    caller records them)."""

    def __init__(self, setup: RunSetup, run_dir: Path, *, record_outcome: RecordOutcome | None = None,
                 publish_steps: Callable[[str], None] | None = None):
        self.setup = setup
        self.cfg = setup.cfg
        self.run_dir = Path(run_dir)
        self.record_outcome = record_outcome
        self.publish_steps = publish_steps
        self.stopping: Callable[[], bool] | None = None  # the run's first Ctrl-C (an outside agent's by-hand session ends)

    def run_query(self, query: Query, client, on_call=None) -> QueryOutcome:
        """Run one query and write its files; never raises (a Python exception is a harness_error)."""
        started = time.perf_counter()
        roots: list = []  # the search trees so far, for the partial tree of a failed query
        ctx: QueryContext | None = None
        try:
            toolset = build_toolset(query, self.cfg.flavour, self.setup.compat, tool_root=self.cfg.tool_root)
            ctx = QueryContext(toolset=toolset, group=query.group, method=self.cfg.method, seed=self.cfg.seed)
            data = self.search(toolset, ctx, client, on_call, roots)
            return self.write_query(query, ctx, data, time.perf_counter() - started)
        except Exception as exc:  # a bug or an unexpected failure: record it, keep the run going
            failure = InfraFailure(HARNESS_ERROR, f"{type(exc).__name__}: {exc}")
            data = {"traceback": traceback.format_exc(), "trees": _trees(roots)}
            return self.write_query(query, ctx, data, time.perf_counter() - started, failure)
        finally:
            release(roots)  # written: freed now, not by a full garbage collection later (search/tree.py)

    def search(self, toolset, ctx: QueryContext, client, on_call, roots: list) -> dict:
        """The run's search method on one query: its answer file as a dict (search/methods.py)."""
        setup = self.setup
        if setup.outside is not None:  # an outside agent makes the calls (runners/outside/drive.py)
            return setup.outside.run_query(setup, toolset, ctx, client, roots, stopping=self.stopping)
        agent = Agent(backend=setup.backend, dialect=setup.dialect, parse=setup.parse, max_tokens=self.cfg.max_tokens,
                      temperature=self.cfg.temperature, on_call=on_call, structured=setup.structured,
                      send_seed=self.cfg.trial is not None)

        def new_root() -> Node:
            env = ToolEnv(toolset, client, setup.compat, max_observation_length=self.cfg.max_observation_length)
            roots.append(Node.root(initial_messages(toolset), env))
            return roots[-1]

        return setup.method.search(agent, ctx, new_root, setup.limits)

    def write_query(self, query: Query, ctx: QueryContext | None, data: dict, wall_s: float,
                    failure: InfraFailure | None = None) -> QueryOutcome:
        failure = failure or (ctx.infra_failure if ctx else None)
        # an infrastructure failure has no answer: none of its flags count (evaluation/scoring/counts.py defines them)
        flags = answer_flags(data) if failure is None else {"valid_data": False, "answered": False, "win": False}
        budget = ctx.budget if ctx else None
        stats = {"group": query.group, "query_id": query.query_id, "method": self.cfg.method,
                 "query_count": budget.query_count if budget else 0,
                 "total_tokens": budget.total_tokens if budget else 0,
                 "model_seconds": round(budget.model_seconds, 4) if budget else 0.0,
                 "env_seconds": round(budget.env_seconds, 4) if budget else 0.0,
                 # cost and latency (issue 42): each call's usage and seconds (runs/cost.py: per query, p50 / p95)
                 "prompt_tokens": budget.prompt_tokens if budget else 0,
                 "completion_tokens": budget.completion_tokens if budget else 0,
                 "model_latencies_s": list(budget.latencies) if budget else [],
                 "wall_seconds": round(wall_s, 4), **flags,
                 # model requests the endpoint refused as longer than the model's context (the model's limit)
                 "context_length": ctx.context_length if ctx else 0,
                 # model turns, the valid ones, re-asks (toolbench_adapter/structured/rates.py)
                 **query_stats(ctx.records if ctx else []),
                 **((ctx.agent or {}) if ctx else {}),  # an outside agent's outcome (runners/outside/drive.py)
                 **(failure.as_fields() if failure else FINISHED_FIELDS)}
        # step records first (the query's own file, then steps.jsonl), the answer file last: an answer file on
        # disk means the query is complete and its records are readable in steps.jsonl
        if ctx is not None:
            text = "".join(encode_record(r) + "\n" for r in ctx.records)  # requests encoded once (call_record)
            write_text_atomic(steps_path(self.run_dir, query.group, query.query_id, self.cfg.method), text)
            if self.publish_steps is not None:
                self.publish_steps(text)
        failed = failed_path(self.run_dir, query.group, query.query_id, self.cfg.method)
        if failure is not None:  # no answer file: a rerun of the same command redoes this query
            write_json_atomic(failed, {**data, "infra_failure": failure.as_fields()}, fsync=True)
        else:  # answer files are fsynced: resume trusts that a file on disk is whole
            write_json_atomic(answer_path(self.run_dir, query.group, query.query_id, self.cfg.method), data,
                              fsync=True)
            failed.unlink(missing_ok=True)  # an earlier session's failure, now redone
        # the stats line right after the file, from this worker: a kill in between loses no finished query's
        # line (and resume.recover_stats mends the microseconds that remain)
        if self.record_outcome is not None:
            self.record_outcome(stats, failure)
        return QueryOutcome(query.group, query.query_id, answered=flags["answered"], valid=flags["valid_data"],
                            failure=failure, stats=stats)


def _trees(roots: list) -> list:
    """The partial trees of a query that raised; a tree that cannot be written is named, not lost silently."""
    trees = []
    for root in roots:
        try:
            trees.append(root.to_json(with_children=True))
        except Exception as exc:  # the same bug may sit in the serialiser
            trees.append({"unwritable": f"{type(exc).__name__}: {exc}"})
    return trees
