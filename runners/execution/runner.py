"""A run: queries x method x model x dialect x parser against a tool server.

Concurrency over queries, resume (finished queries are skipped), atomic files (a run killed at any
moment loses at most the queries in flight), shards, a progress bar, and a manifest that records
everything that defines the run plus what it cost.

Every query ends "finished" (the model's own success or failure: an answer file at the upstream path) or
"infra_failure" (model endpoint, tool server, replay gap, harness error: no answer file, so rerunning the
same command redoes it; its partial tree goes to failed/). Both are counted and named in the manifest.

The driver's jobs only: the session (lock, preflight, manifest, Ctrl-C), the outcome records shared by every
query (queries.jsonl, errors.jsonl, steps.jsonl) and the stop after too many infrastructure failures in a row.
One query is query.py's; what is settled before any query, preflight.py's; the manifest, manifest.py's;
resume, resume.py's; the run folder's names, toolbench_adapter/runs/folder.py's.
"""

from __future__ import annotations

import contextlib
import errno
import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tqdm import tqdm

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import AppendFiles, write_json_atomic
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.runs.folder import (
    ERRORS,
    FAILED_DIR,
    MANIFEST,
    QUERY_STATS,
    STEPS,
    STEPS_DIR,
    collect_steps,
    failed_path,
    remove_empty_dirs,
    steps_path,
)

from ..config import RunConfig
from ..failures import HARNESS_ERROR, InfraFailure
from .executors import executor_class, make_executor
from .identity import QueryIdentity, check_queries
from .interrupt import CtrlC, StopNow, queries, speaker
from .manifest import build_manifest, check_manifest, iso_time
from .preflight import make_backend, prepare, simulator_endpoint
from .progress import ProgressTally
from .query import QueryOutcome, QueryRunner
from .resume import pending
from .runlock import RunFolderLock
from .setup_facts import measured_coverage, say_before_run


class CannotWriteRun(InputError):
    """A write of the run's own files failed mid-run (a full disk, a folder gone read-only): no query started
    after it, the session is recorded as interrupted, and the message names the path and the command that goes
    on (exit 2). Before, the OSError was a traceback with a torn steps.jsonl."""


class Runner:
    def __init__(self, cfg: RunConfig, backend=None, server_url: str | None = None, progress: bool = True,
                 client_options: dict | None = None, command: str | None = None, executor=None, outside=None,
                 tool_host=None):
        cfg.validate()
        cfg.search_method()  # an unknown method: exit 2 before a backend is built
        if executor is None:
            executor_class(cfg.executor)  # so is an unknown executor
        setup = prepare(cfg, backend if backend is not None else make_backend(cfg), outside)
        self.setup = setup
        self.cfg = cfg = setup.cfg
        self.backend = setup.backend
        self.compat = setup.compat
        self.dialect = setup.dialect
        self.parser_name = setup.parser_name
        self.parse = setup.parse
        self.structured = setup.structured  # --constrain / --on-invalid (search/structured.py); None: as upstream
        self.method = setup.method
        self.server_url = server_url
        # the embedded tool server's listener, shared with other runs of this process (a sweep's cells:
        # server/runner.py EmbeddedHost); None: the run starts and stops one of its own
        self.tool_host = tool_host
        self.tool_probe = None  # the tool server's counts over a session (setup_facts.py)
        self.tool_session: dict | None = None
        self.tool_coverage = None  # how many of the queries' tools the tool folder documents (setup_facts.py)
        self.simulator_endpoint = None  # the embedded server's llm / mirrorapi endpoint, checked (preflight.py)
        # tool-server client settings beyond the config's (tests: a short backoff)
        self.client_options = {"timeout_s": cfg.server_timeout, "attempts": cfg.server_attempts,
                               **(client_options or {})}
        self.progress = progress
        # called with each query's outcome as it ends, and once with the count already done (a sweep's one bar)
        self.on_query_end: Callable[[QueryOutcome | int], None] | None = None
        # called once the checks and preflights are done, just before the queries start (a sweep starts its
        # cells one after another up to here: runners/sweep/scheduler.py StartGate)
        self.on_started: Callable[[], None] | None = None
        self.command = command  # the command line that started this session (the manifest keeps it: redo hint)
        # how queries are spread (execution/executors.py): threads here, or Ray workers; made now so a missing
        # extra is exit 2 before anything is written
        self.executor = executor if executor is not None else make_executor(cfg)
        self.run_dir = cfg.run_dir
        self.queries = QueryRunner(setup, self.run_dir, record_outcome=self.record_outcome,
                                   publish_steps=self.publish_steps)
        self.queries.stopping = lambda: self.stopping
        self._lock = threading.Lock()
        # set when too many queries in a row failed for infrastructure reasons: queries not yet started are
        # then recorded as failures of that kind without a model or tool call (a dead server costs nothing more)
        self.halt: InfraFailure | None = None
        self._streak = 0
        self.stopping = False  # set by a first Ctrl-C: queries not started yet are skipped (not recorded)
        # the first failed write of the run (path, error): set, it stops the run as a first Ctrl-C does
        self.write_failure: tuple[Path, OSError] | None = None
        self.unwritten: list[str] = []  # "group/query_id" of queries whose files could not be written
        self.appends = AppendFiles()  # queries.jsonl, errors.jsonl, steps.jsonl: open while the session runs
        self.identity: QueryIdentity | None = None  # this session's queries and their digests (identity.py)

    # -- the tool server ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def tool_server(self):
        from .setup_facts import ToolServerProbe

        if self.server_url or self.cfg.server != "embedded":
            url = self.server_url or self.cfg.server
            self.tool_probe = ToolServerProbe([url] if isinstance(url, str) else list(url))
            yield url
            return
        from toolbench_adapter.queryset.queries import resolve_root
        from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
        from toolbench_adapter.server.runner import EmbeddedServer

        server = build_virtual_server(ServerConfig(
            cache_dir=self.cfg.cache_dir, tools_dir=self.cfg.tool_root, stb_root=resolve_root(self.cfg.stb_root),
            simulator=self.cfg.simulator, simulator_options=self.cfg.simulator_options(),
            save=self.cfg.cache_dir is not None, compat=self.compat))
        server.simulator_endpoint = self.simulator_endpoint.facts() if self.simulator_endpoint else None
        self.tool_probe = ToolServerProbe([], embedded=server, simulator=self.cfg.simulator)
        if self.tool_host is not None:  # its own app and VirtualServer (cache, simulator, counts), a shared listener
            from toolbench_adapter.protocol.server import VIRTUAL_PATH

            with self.tool_host.mounted(create_app(server)) as prefix:
                yield prefix + VIRTUAL_PATH
            return
        with EmbeddedServer(create_app(server)) as embedded:
            yield embedded.url

    # -- one query --------------------------------------------------------------------------------------
    def run_query(self, query: Query, client, on_call=None) -> QueryOutcome | None:
        """Run one query and write its files (query.py); never raises. None: not started, because a Ctrl-C came
        first (nothing recorded; a rerun runs it)."""
        if self.stopping:
            return None
        if self.halt is not None:
            return self.not_started(query)
        return self.queries.run_query(query, client, on_call)

    def failed_path(self, group: str, query_id: int) -> Path:
        return failed_path(self.run_dir, group, query_id, self.cfg.method)

    def steps_path(self, group: str, query_id: int) -> Path:
        return steps_path(self.run_dir, group, query_id, self.cfg.method)

    def publish_steps_of(self, group: str, query_id: int) -> None:
        """The driver's share under Ray: a worker wrote the query's step file, the driver appends it."""
        with contextlib.suppress(FileNotFoundError):
            self.publish_steps(self.steps_path(group, query_id).read_text(encoding="utf-8"))

    def publish_steps(self, text: str) -> None:
        """A query's step records appended to steps.jsonl as it ends, in one write: a run killed at any moment
        leaves every ended query's records readable there. The end of the run rewrites the file in a stable
        order, and a resumed run first rebuilds it from the per-query files (no line twice, none torn)."""
        if not text or self.write_failure is not None:  # after a failed write nothing more: the rerun rebuilds it
            return
        try:  # no lock: O_APPEND puts each query's records whole at the end (AppendFiles)
            self.appends.append(self.run_dir / STEPS, text.encode("utf-8"))
        except OSError as exc:  # a full disk: the query's own step file holds them (resume rebuilds from it)
            self._cannot_write(self.run_dir / STEPS, exc)

    # -- the whole run -----------------------------------------------------------------------------------
    def pending(self) -> tuple[list[Query], int]:
        return pending(self.cfg, self.run_dir, self._append,
                       selected=self.identity.selected if self.identity is not None else None)

    def effective_model(self) -> str:
        """The model this run asks: --model, else the name the backend settled on (the one the endpoint serves,
        adopted by the preflight), else the backend's name."""
        return (self.cfg.model or getattr(self.backend, "model", None) or getattr(self.backend, "model_name", None)
                or self.cfg.backend)

    def check_manifest(self, model: str | None = None) -> dict | None:
        return check_manifest(self.run_dir, self.cfg, model)

    def check_run(self, note: bool = True) -> dict | None:
        """The run already in the folder (its manifest, None: a new run), refused (exit 2) when it defines another
        run: other settings, or other queries (identity.py). Reads files only: before any model is loaded or
        asked, and before anything is written."""
        previous = self.check_manifest(self.cfg.model)
        self.identity = check_queries(self.run_dir, self.cfg, previous, note=note)
        return previous

    def _manifest(self, previous: dict | None, **session: Any) -> dict:
        return build_manifest(self, previous, **session)

    def run(self) -> dict:
        """Run the pending queries, holding the run folder's lock (another command writing the folder: exit 2
        naming it). Ctrl-C: no query starts, those in flight finish, the session is recorded as interrupted;
        a second Ctrl-C raises StopNow at once (the queries in flight recorded as not finished)."""
        with RunFolderLock(self.run_dir, self.command, hold_folder=True):
            try:
                return self._run()
            finally:
                self.appends.close()

    def _run(self) -> dict:
        self.check_run()  # the settings and the queries, before any endpoint is asked or model loaded
        if not self.server_url:  # the embedded server's simulator endpoint (one GET /models), before the model's
            self.simulator_endpoint = simulator_endpoint(self.cfg)
        self.backend.preflight()
        if self.structured is not None:  # a backend that cannot constrain: exit 2 before any query
            self.structured.check_backend(self.backend)
        previous = self.check_manifest(self.effective_model())  # the model the endpoint serves, now known
        todo, done_before = self.pending()
        if self.on_query_end is not None and done_before:
            self.on_query_end(done_before)
        # steps.jsonl from the per-query files of what stays (an interrupted session's appends may be torn or
        # repeat a query that runs again): this session appends each query's records as it ends
        self.appends.close()  # steps.jsonl is rewritten whole next (resume's appends to queries.jsonl are done)
        if (self.run_dir / STEPS_DIR).is_dir():
            collect_steps(self.run_dir, skip={self.steps_path(q.group, q.query_id) for q in todo})
        started = time.time()
        # once a session (the manifest and the notice read it); an unreadable tool document: exit 2, no query run
        self.tool_coverage, self.tool_session = measured_coverage(self.cfg), None
        manifest = self._manifest(previous, started=started)
        manifest["sessions"][-1].update(queries_selected=len(todo) + done_before, queries_to_run=len(todo))
        outcomes: list[QueryOutcome] = []
        tally = ProgressTally()  # the bar's counts, kept as outcomes arrive (not recounted: O(n) per query)
        bar = tqdm(total=len(todo), desc=f"{self.cfg.name} {self.cfg.method}", unit="query",
                   disable=not self.progress, dynamic_ncols=True)
        with self.tool_server() as url:
            from toolbench_adapter.server.client import ServerClient

            client = ServerClient(url, rate_per_s=self.cfg.server_rate, **self.client_options)
            stream = None
            try:
                client.preflight()  # every --server URL answers /virtual, or exit 2 naming it, before any query
                self.tool_probe.begin()  # the tool server's counts so far (setup_facts.py)
                if self.on_started is not None:
                    self.on_started()
                # the session is recorded only now: a refused preflight leaves no session that reads as interrupted
                try:
                    write_json_atomic(self.run_dir / MANIFEST, manifest, fsync=True)
                except OSError as exc:  # a file in the way, a read-only place: say so before any query runs
                    raise InputError(f"cannot write the run folder ({exc.strerror or exc})", path=self.run_dir,
                                     fix="choose a writable --out-root, or another --name") from None
                say_before_run(manifest, todo, speaker(self.command))  # what makes it not comparable, first
                with CtrlC(lambda: len(self.executor.in_flight()), self._stop_starting,
                           speaker(self.command)) as ctrl_c:
                    stream = self.executor.map(self, todo, client)
                    for query, outcome in stream:
                        if outcome is None:  # not started: Ctrl-C came first
                            continue
                        # run_query records its own outcome and exceptions, unless writing that record failed too
                        # (or the executor lost the query: a Ray worker that died more often than its retries)
                        if not isinstance(outcome, QueryOutcome):
                            if self._files_unwritten(query, outcome):  # not finished: no answer file, a rerun redoes it
                                continue
                            outcome = self._unrecorded_failure(query, outcome)
                            self.record_outcome(outcome.stats, outcome.failure)
                        outcomes.append(outcome)
                        tally.add(outcome)
                        if self.on_query_end is not None:
                            self.on_query_end(outcome)
                        bar.update(1)
                        bar.set_postfix_str(tally.text(), refresh=False)
                if self.write_failure is not None:  # as a Ctrl-C, the queries in flight ended first
                    raise self._cannot_write_error(outcomes)
                if ctrl_c.pressed:  # the queries in flight have finished: the session ends as interrupted
                    raise KeyboardInterrupt
                endpoints = self.executor.endpoint_stats(self, client)  # requests served / failed per endpoint
            except CannotWriteRun as exc:
                bar.close()
                self.tool_session = self.tool_probe.end()  # the interrupted session's tool calls count too
                with contextlib.suppress(OSError):  # still full: the session stays recorded as not finished
                    self._record_interruption(manifest, exc, outcomes, todo, done_before, started)
                raise
            except KeyboardInterrupt as exc:
                bar.close()
                self.tool_session = self.tool_probe.end()  # before the record: a resumed run sums them all
                self._record_interruption(manifest, exc, outcomes, todo, done_before, started)
                raise
            finally:
                bar.close()
                if stream is not None:
                    stream.close()  # after a second Ctrl-C: lets go of the queries in flight without waiting
                client.close()
                self.tool_session = self.tool_probe.end()  # this session's hits, misses and who made the answers
        self.appends.close()  # every query has ended: steps.jsonl is rewritten whole, in a stable order
        collect_steps(self.run_dir)
        remove_empty_dirs(self.run_dir / FAILED_DIR)  # redone failures leave their folders behind
        manifest = self._manifest(manifest, finished=time.time(), outcomes=outcomes, skipped=done_before,
                                  seconds=time.time() - started)
        manifest["sessions"][-1].update(executor=self.executor.name, endpoints=endpoints)
        if self.halt is not None:
            manifest["sessions"][-1]["halted"] = (
                f"{sum(bool(o.stats.get('not_started')) for o in outcomes)} queries not started after "
                f"{self.cfg.stop_after_infra_failures} in a row failed ({self.halt.kind}); "
                f"--stop-after-infra-failures sets the limit")
        write_json_atomic(self.run_dir / MANIFEST, manifest, fsync=True)
        return manifest

    def _stop_starting(self) -> None:
        """The first Ctrl-C: no query starts from now on (threads skip them, ray dispatches no more)."""
        self.stopping = True

    def _record_interruption(self, manifest: dict, exc: BaseException, outcomes: list[QueryOutcome],
                             todo: list[Query], skipped: int, started: float) -> None:
        """Ctrl-C: the session gets ``interrupted`` (its time) and no ``finished``, so tba evaluate reads the run
        as interrupted; its counts so far and the totals are recorded. After a second Ctrl-C (StopNow) the
        queries still in flight are named in ``not_finished``: no answer file, so a rerun redoes them."""
        stop_now = isinstance(exc, StopNow)
        in_flight = [f"{q.group}/{q.query_id}" for q in self.executor.in_flight()] if stop_now else []
        if stop_now:
            exc.in_flight = in_flight
        elif self.write_failure is None:  # the files are whole: steps.jsonl in its stable order (a stop now, or a
            self.appends.close()          # failed write, leaves the appended one: the rerun rebuilds it)
            collect_steps(self.run_dir)
        unfinished = in_flight + self.unwritten
        now = time.time()
        manifest = self._manifest(manifest, ended=now, outcomes=outcomes, skipped=skipped, seconds=now - started)
        manifest["sessions"][-1].update(
            interrupted=iso_time(now), stopped_now=stop_now, not_finished=unfinished,
            not_started=max(0, len(todo) - len(outcomes) - len(unfinished)), executor=self.executor.name)
        write_json_atomic(self.run_dir / MANIFEST, manifest, fsync=True)

    def _cannot_write(self, path: Path, exc: OSError) -> None:
        """A write of the run failed: like a first Ctrl-C, no query starts from now on; the first failure is kept
        for the message. Takes no lock: the appends and the worker threads call it."""
        if self.write_failure is None:
            self.write_failure = (Path(path), exc)
            tqdm.write(f"{speaker(self.command)}: {_write_problem(path, exc)}: starting no more queries; waiting for "
                       f"the {queries(len(self.executor.in_flight()))} in flight", file=sys.stderr)
        self.stopping = True

    def _files_unwritten(self, query: Query, exc: Exception) -> bool:
        """An OSError out of run_query (which records every other exception itself) is its files failing to be
        written: the query is not finished, the run stops starting queries. A Ray task error wraps it."""
        cause = getattr(exc, "cause", exc)
        if not isinstance(cause, OSError):
            return False
        path = getattr(cause, "path", None) or getattr(cause, "filename", None) or self.run_dir
        self._cannot_write(Path(path), cause)
        self.unwritten.append(f"{query.group}/{query.query_id}")
        return True

    def _cannot_write_error(self, outcomes: list[QueryOutcome]) -> CannotWriteRun:
        path, exc = self.write_failure
        redo = self.command or "the same tba run command"
        return CannotWriteRun(
            f"{_write_problem(path, exc)}: no query started after it; the session is recorded as interrupted "
            f"({len(outcomes)} queries ended this session, {len(self.unwritten)} could not be written: a rerun "
            "redoes those and skips the finished ones)", fix=f"free space and rerun {redo}")

    def _unrecorded_failure(self, query: Query, exc: Exception) -> QueryOutcome:
        return self._empty_failure(query, InfraFailure(HARNESS_ERROR, f"{type(exc).__name__}: {exc}"))

    def _empty_failure(self, query: Query, failure: InfraFailure, **extra: Any) -> QueryOutcome:
        """The outcome of a query that left no tree behind (nothing ran, or its record could not be written)."""
        stats = {"group": query.group, "query_id": query.query_id, "method": self.cfg.method, "query_count": 0,
                 "total_tokens": 0, "model_seconds": 0.0, "env_seconds": 0.0, "wall_seconds": 0.0, "win": False,
                 "valid_data": False, "answered": False, **failure.as_fields(), **extra}
        return QueryOutcome(query.group, query.query_id, failure=failure, stats=stats)

    def not_started(self, query: Query) -> QueryOutcome:
        """A query the run did not start after it stopped early; recorded (queries.jsonl, errors.jsonl) so that
        the summary counts it and a rerun of the same command redoes it."""
        outcome = self._empty_failure(query, self.halt, not_started=True)
        self.record_outcome(outcome.stats, outcome.failure)
        return outcome

    def _watch_streak(self, stats: dict, failure: InfraFailure | None) -> None:
        """Count queries in a row that ended in infrastructure failures; past the limit, start no more. Called
        as each outcome is recorded (in the worker thread, or in the Ray driver), so no query starts after the
        one that reached the limit was recorded."""
        if failure is None:
            self._streak = 0
            return
        if stats.get("not_started"):
            return
        self._streak += 1
        limit = self.cfg.stop_after_infra_failures
        if limit and self._streak >= limit and self.halt is None:
            self.halt = InfraFailure(failure.kind, f"not started: {self._streak} queries in a row ended in "
                                                   f"infrastructure failures (last: {failure.kind}: {failure.detail})")
            tqdm.write(f"{speaker(self.command)}: {queries(self._streak)} in a row failed ({failure.kind}): starting "
                       "no more queries; fix the cause and rerun the same command", file=sys.stderr)

    def record_outcome(self, stats: dict, failure: InfraFailure | None) -> None:
        """queries.jsonl gets every query's line; errors.jsonl every infrastructure failure's."""
        with self._lock:
            self._watch_streak(stats, failure)
        self._append(QUERY_STATS, stats)
        if failure is not None:
            self._append(ERRORS, {**{k: stats[k] for k in ("group", "query_id", "method")},
                                  **failure.as_fields(), "time": iso_time(time.time()),
                                  "partial": str(self.failed_path(stats["group"], stats["query_id"]))})

    def _append(self, name: str, record: dict) -> None:
        # after a failed write nothing more (an append already under way in another thread may still land after
        # the torn line: readers skip a line that does not parse, and resume mends the lines lost)
        if self.write_failure is not None:
            return
        path = self.run_dir / name
        try:  # no lock: O_APPEND puts each line whole at the end (AppendFiles)
            self.appends.append(path, (json.dumps(record) + "\n").encode("utf-8"))
        except OSError as exc:  # a full disk: the answer file is the record (resume.recover_stats)
            self._cannot_write(path, exc)


def _write_problem(path: Path, exc: OSError) -> str:
    """"disk full at PATH", else "cannot write at PATH (reason)". An OutputPathError keeps the OSError it
    replaced as its context."""
    cause: BaseException | None = exc
    while cause is not None and not getattr(cause, "errno", None):
        cause = cause.__context__
    if cause is not None and cause.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"disk full at {path}"
    reason = getattr(cause, "strerror", None) or str(exc)
    return f"cannot write at {path} ({reason})"
