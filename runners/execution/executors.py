"""How a run spreads its queries: ``threads`` of this process (the default) or ``ray`` (a Ray cluster).

An executor maps ``Runner.run_query`` over the pending queries and yields ``(query, result)`` as each one
ends: its QueryOutcome, or the exception that kept run_query from recording one. run_query itself
(execution/query.py) writes the query's files (step records, then the answer file or failed/ tree, each atomically) into the run
folder, wherever it runs; the runner in the driver keeps the progress bar, the manifest and resume (and
under ray writes queries.jsonl and errors.jsonl itself). So a run is the same files whichever executor ran it.

``ray``: a few query workers (Ray actors, one per CPU of the cluster by default) each rebuild the runner
from the run's config (backend, dialect, tool-server client: no live session or lock crosses a process)
and run up to concurrency/workers queries at once in threads; each query is one actor task. A worker
that dies is restarted and its queries in flight are retried (``max_retries`` times each); a query that still fails
comes back as the exception (an infrastructure failure, redone by a rerun). Rate limits are per process,
so each worker gets its share of --server-rate and of the backend's rate_per_s.

Ctrl-C (execution/interrupt.py) sets ``runner.stopping``: threads return None for a query not started yet
(the runner skips it), ray dispatches no more; the queries in flight finish. ``in_flight()`` names the queries
running now (the ones a second Ctrl-C leaves unfinished). An exception out of ``map`` (a second Ctrl-C) never
waits for them.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from toolbench_adapter.errors import InputError
from toolbench_adapter.net.transport import merge_stats
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.registry import Registry, UnknownNameError

from ..config import RunConfig
from .preflight import make_backend, prepare
from .query import QueryRunner


class Executor(Protocol):
    name: str

    def map(self, runner: Any, queries: Iterable[Query], client: Any) -> Iterator[tuple[Query, Any]]:
        """Run ``runner.run_query`` over ``queries``; yield (query, QueryOutcome or exception) as each ends."""

    def endpoint_stats(self, runner: Any, client: Any) -> dict[str, list[dict]]:
        """After ``map``: requests served and failed per endpoint, by role ("model", "tool_server")."""

    def in_flight(self) -> list[Query]:
        """The queries started and not ended yet (after a StopNow: those left unfinished)."""


EXECUTORS: Registry = Registry("executors")


def _result(future) -> Any:
    try:
        return future.result()
    except Exception as exc:  # run_query records its own exceptions, unless writing that failed
        return exc


def executor_class(name: str) -> type:
    """The executor registered as ``name`` (this registry, or the entry-point group toolbench_adapter.executors).
    RunConfig.executor is any string: the names are known here, above config/, so an unknown one is refused
    where the run makes it (InputError, exit 2, with the registry's "did you mean"), as backends and parsers are."""
    try:
        return EXECUTORS.get(name)
    except UnknownNameError as exc:
        raise InputError(str(exc), field="executor",
                         fix="pass a registered name with --executor (or as executor: in the --config file)") from None


def make_executor(cfg: RunConfig, **options: Any) -> Executor:
    return executor_class(cfg.executor)(concurrency=cfg.concurrency, address=cfg.ray_address, **options)


def pool_stats(obj: Any, depth: int = 4) -> list[dict]:
    """Per-endpoint stats of whatever pool sits in a backend (the OpenAI backends' endpoint; wrappers such as
    the request memo hold theirs in ``inner``); [] for a backend without HTTP endpoints (hf, scripted)."""
    for _ in range(depth):
        if obj is None:
            return []
        if callable(getattr(obj, "pool_stats", None)):
            return obj.pool_stats()
        obj = getattr(obj, "endpoint", None) or getattr(obj, "inner", None)
    return []


@EXECUTORS.register("threads")
class ThreadsExecutor:
    """``concurrency`` queries at once in threads of this process, sharing one backend and one client."""

    name = "threads"

    def __init__(self, concurrency: int = 1, **_: Any):
        self.concurrency = concurrency
        self._running: dict[int, Query] = {}  # id(query) -> query, while its thread runs it
        self._lock = threading.Lock()

    def map(self, runner: Any, queries: Iterable[Query], client: Any) -> Iterator[tuple[Query, Any]]:
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        futures = {}
        try:
            for query in queries:
                futures[pool.submit(self._run, runner, query, client)] = query
            for future in as_completed(futures):
                yield futures[future], _result(future)
        finally:  # never waits: after a StopNow (or any error) the caller leaves now, queued queries cancelled
            pool.shutdown(wait=False, cancel_futures=True)

    def _run(self, runner: Any, query: Query, client: Any) -> Any:
        with self._lock:
            self._running[id(query)] = query
        try:
            return runner.run_query(query, client)
        finally:
            with self._lock:
                self._running.pop(id(query), None)

    def in_flight(self) -> list[Query]:
        with self._lock:
            return list(self._running.values())

    def endpoint_stats(self, runner: Any, client: Any) -> dict[str, list[dict]]:
        return {"model": pool_stats(runner.backend), "tool_server": client.pool_stats()}


# --- ray ------------------------------------------------------------------------------------------------

RAY_HINT = "install the optional extra: pip install -e '.[ray]' (or pip install ray==2.60.0)"


def require_ray():
    try:
        import ray
    except ImportError:
        raise InputError("--executor ray needs Ray, which is not installed", field="executor", fix=RAY_HINT) from None
    return ray


def connect_ray(address: str | None) -> tuple[Any, bool]:
    """Ray, joined to the cluster at ``address``, else to the one this process already joined, else to a new
    local one (one CPU per core); True when this call started it (its caller shuts it down when done)."""
    ray = require_ray()
    if ray.is_initialized():
        return ray, False
    if address:
        ray.init(address=address, logging_level=logging.WARNING)
        return ray, False
    # "local": a new instance even where another one runs on this machine
    ray.init(address="local", num_cpus=os.cpu_count() or 2, include_dashboard=False, logging_level=logging.WARNING)
    return ray, True


@dataclass
class WorkerJob:
    """What a query worker needs to rebuild the runner in its own process: plain data only. Sent with every
    query (a few hundred bytes), so a restarted worker, or one kept from an earlier run, builds it on first
    sight; ``job_id`` names the run session."""

    job_id: str
    cfg: RunConfig
    server_urls: list[str]
    client_options: dict = field(default_factory=dict)
    backend_factory: Callable[[], Any] | None = None  # None: the backend named in cfg, built from cfg


class QueryWorker:
    """One worker process (a Ray actor): for the current job, a QueryRunner (execution/query.py: one query,
    run and written) and a tool-server client of its own, queries in threads. It never sees the driver's
    Runner: what it needs travels as plain data in the WorkerJob."""

    def __init__(self):
        self._jobs: dict[str, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def _state(self, job: WorkerJob) -> tuple[Any, Any]:
        with self._lock:
            if job.job_id not in self._jobs:
                from toolbench_adapter.server.client import ServerClient

                backend = job.backend_factory() if job.backend_factory is not None else make_backend(job.cfg)
                # the driver writes queries.jsonl, errors.jsonl and steps.jsonl (one writer; a worker that outlives a
                # killed driver for a moment adds no stale line): the worker only writes the query's files
                queries = QueryRunner(prepare(job.cfg, backend), job.cfg.run_dir)
                client = ServerClient(job.server_urls, rate_per_s=job.cfg.server_rate, **job.client_options)
                self._jobs = {job.job_id: (queries, client)}  # an earlier run's state goes
            return self._jobs[job.job_id]

    def run(self, job: WorkerJob, query: Query) -> Any:
        queries, client = self._state(job)
        return queries.run_query(query, client)

    def stats(self, job_id: str) -> dict[str, list[dict]]:
        state = self._jobs.get(job_id)
        if state is None:  # restarted since: its counts went with the old process
            return {"model": [], "tool_server": []}
        queries, client = state
        return {"model": pool_stats(queries.setup.backend), "tool_server": client.pool_stats()}


def worker_config(cfg: RunConfig, backend: Any, workers: int) -> RunConfig:
    """The run's config as each worker builds from it: the model name the driver's preflight adopted, and a
    1/workers share of each rate limit (limiters live in one process; the run's budget is for all)."""
    model = cfg.model
    if model is None and isinstance(getattr(backend, "model", None), str):
        model = backend.model
    options = dict(cfg.backend_options)
    if options.get("rate_per_s") is not None:
        options["rate_per_s"] = float(options["rate_per_s"]) / workers
    rate = cfg.server_rate / workers if cfg.server_rate else cfg.server_rate
    return replace(cfg, model=model, backend_options=options, server_rate=rate)


@EXECUTORS.register("ray")
class RayExecutor:
    """Queries as tasks of query workers on a Ray cluster: ``address`` to join one, None to use the one this
    process already joined or else start a local one (one worker process per CPU)."""

    name = "ray"

    def __init__(self, concurrency: int = 1, address: str | None = None, workers: int | None = None,
                 max_retries: int = 3, backend_factory: Callable[[], Any] | None = None, **_: Any):
        require_ray()  # a missing extra is bad input before the run writes anything
        self.concurrency = concurrency
        self.address = address
        self.workers = workers
        self.max_retries = max_retries
        self.backend_factory = backend_factory
        self.stats: dict[str, list[dict]] = {"model": [], "tool_server": []}
        self._in_flight: dict = {}
        self._started_here = False
        self._workers: list = []

    def connect(self):
        ray, started = connect_ray(self.address)
        self._started_here = self._started_here or started
        return ray

    def worker_count(self, ray) -> int:
        if self.workers:
            return self.workers
        cpus = int(ray.cluster_resources().get("CPU", 1))
        return max(1, min(self.concurrency, cpus))

    def map(self, runner: Any, queries: Iterable[Query], client: Any) -> Iterator[tuple[Query, Any]]:
        pending = list(queries)
        if not pending:
            return
        ray = self.connect()
        workers = self._start_workers(ray)
        job = WorkerJob(uuid.uuid4().hex, worker_config(runner.cfg, runner.backend, len(workers)), list(client.urls),
                        dict(runner.client_options), self.backend_factory)
        try:
            yield from self._dispatch(ray, runner, workers, job, pending)
            self.stats = self._gather_stats(ray, workers, job.job_id)
        finally:
            if self._started_here:  # a cluster started for this run goes with it
                self.close()

    def _start_workers(self, ray) -> list:
        """The query workers, started once and kept for later runs of this executor (benchmarks, sweeps)."""
        if not self._workers:
            count = self.worker_count(ray)
            cpus = min(1.0, ray.cluster_resources().get("CPU", 1) / count)
            actor = ray.remote(QueryWorker).options(
                num_cpus=cpus, max_concurrency=math.ceil(self.concurrency / count), max_restarts=-1,
                max_task_retries=self.max_retries, scheduling_strategy="SPREAD")
            self._workers = [actor.remote() for _ in range(count)]
        return self._workers

    def close(self) -> None:
        ray = require_ray()
        for worker in self._workers:
            ray.kill(worker)
        self._workers = []
        if self._started_here:
            ray.shutdown()
            self._started_here = False

    def _dispatch(self, ray, runner: Any, workers: list, job: WorkerJob,
                  pending: list[Query]) -> Iterator[tuple[Query, Any]]:
        """At most ``concurrency`` queries in flight, each sent to the worker with the fewest."""
        load = [0] * len(workers)
        self._in_flight = in_flight = {}  # object ref -> (query, worker index)
        position = 0
        while (position < len(pending) and not runner.stopping) or in_flight:  # Ctrl-C: dispatch no more
            while position < len(pending) and len(in_flight) < self.concurrency and not runner.stopping:
                index = min(range(len(workers)), key=load.__getitem__)
                query = pending[position]
                position += 1
                if runner.halt is not None:  # the run stopped early: the driver records it as not started
                    yield query, runner.not_started(query)
                    continue
                in_flight[workers[index].run.remote(job, query)] = (query, index)
                load[index] += 1
            if in_flight:
                yield from self._collect(ray, runner, in_flight, load)

    def _collect(self, ray, runner: Any, in_flight: dict, load: list[int]) -> Iterator[tuple[Query, Any]]:
        """The next query (or queries) to end, recorded by the driver."""
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            query, index = in_flight.pop(ref)
            load[index] -= 1
            try:
                outcome = ray.get(ref)
            except Exception as exc:  # the worker died more often than max_retries, or the task raised
                yield query, exc  # the runner records it as an infrastructure failure
                continue
            # the worker left these to the driver (one writer of the run's shared files)
            runner.publish_steps_of(outcome.group, outcome.query_id)
            runner.record_outcome(outcome.stats, outcome.failure)
            yield query, outcome

    def in_flight(self) -> list[Query]:
        return [query for query, _ in list(self._in_flight.values())]

    def _gather_stats(self, ray, workers: list, job_id: str) -> dict[str, list[dict]]:
        try:
            per_worker = ray.get([worker.stats.remote(job_id) for worker in workers], timeout=60)
        except Exception:  # stats are a record, not the run: a worker gone at the end must not fail it
            return {"model": [], "tool_server": []}
        return {role: merge_stats(*(stats[role] for stats in per_worker)) for role in ("model", "tool_server")}

    def endpoint_stats(self, runner: Any, client: Any) -> dict[str, list[dict]]:
        return self.stats
