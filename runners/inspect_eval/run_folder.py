"""An inspect evaluation's queries as a tba run: a Runner's pieces (execution/runner.py) without its loop, since
inspect drives the samples. The tool server is the Runner's (embedded, or --server's URL); with ``write`` the run
folder gets what ``tba run`` writes (the folder's lock, identity and settings checks, the manifest at the start
and after every query, each query's answer file, step records and queries.jsonl line through QueryRunner), so
tba evaluate, table, report and compare-runs read it as any run."""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from dataclasses import replace
from typing import Any

from toolbench_adapter.files.fileio import write_json_atomic
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.runs.folder import MANIFEST, answer_path, collect_steps

from ..config import RunConfig
from ..execution.runlock import RunFolderLock
from ..execution.runner import Runner
from ..outside.drive import session_outcome
from ..outside.session import QuerySession
from ..search.agent import QueryContext


class InspectRun:
    def __init__(self, cfg: RunConfig, *, write: bool, selected: list, expected: int):
        """``selected``: the run's queries; ``expected``: how many of them inspect runs now (those not done)."""
        self.runner = Runner(cfg, progress=False, command=f"inspect eval toolbench_adapter/stabletoolbench -T run={cfg.name}")
        self.cfg = self.runner.cfg
        self.write = write
        self.selected = selected
        self.expected = expected
        self.outcomes: list = []
        self._lock = threading.RLock()
        self._stack = contextlib.ExitStack()
        atexit.register(self.close)
        self.started = time.time()
        if write:
            self._stack.enter_context(RunFolderLock(self.cfg.run_dir, self.runner.command, hold_folder=True))
            previous = self.runner.check_run(note=False)  # another run's settings or queries: refused (exit 2)
            self.manifest = self.runner._manifest(previous, started=self.started)
        url = self._stack.enter_context(self.runner.tool_server())
        from toolbench_adapter.server.client import ServerClient

        self.client = ServerClient(url, **self.runner.client_options)
        self._stack.callback(self.client.close)
        self.client.preflight()
        self.runner.tool_probe.begin()
        if write:
            self.manifest["sessions"][-1].update(queries_selected=len(selected), queries_to_run=expected)
            write_json_atomic(self.cfg.run_dir / MANIFEST, self.manifest, fsync=True)

    @staticmethod
    def pending_of(cfg: RunConfig, queries: list) -> list:
        """The queries without an answer file in the run folder (a rerun goes on where the last one stopped)."""
        return [q for q in queries if not answer_path(cfg.run_dir, q.group, q.query_id, cfg.method).exists()]

    def open(self, query: Any) -> tuple[QuerySession, QueryContext]:
        setup = self.runner.setup
        toolset = build_toolset(query, self.cfg.flavour, setup.compat, tool_root=self.cfg.tool_root)
        ctx = QueryContext(toolset=toolset, group=query.group, method=self.cfg.method, seed=self.cfg.seed)
        session = QuerySession(toolset, ctx, self.client, setup.compat, max_calls=self.cfg.max_step,
                               max_observation_length=self.cfg.max_observation_length)
        return session, ctx

    def finish_query(self, query: Any, ctx: QueryContext, session: QuerySession, data: dict, wall_s: float) -> None:
        ctx.agent = session_outcome(session)
        if not self.write:
            return
        outcome = self.runner.queries.write_query(query, ctx, data, wall_s)
        with self._lock:
            self.outcomes.append(outcome)
            self._select_what_ran()
            self.manifest = self.runner._manifest(self.manifest, outcomes=self.outcomes,
                                                  skipped=len(self.selected) - self.expected,
                                                  seconds=time.time() - self.started, finished=time.time())
            write_json_atomic(self.cfg.run_dir / MANIFEST, self.manifest, fsync=True)
            if len(self.outcomes) >= self.expected:
                self.close()

    def _select_what_ran(self) -> None:
        """The run's selection is what inspect ran (its --limit, --sample-id ... choose among the task's samples):
        the manifest's config names those queries (groups and ids), so a run folder of 2 samples out of 765 reads
        as a complete run of 2 queries, not as an interrupted one of 765."""
        ran = [q for q in self.selected if answer_path(self.cfg.run_dir, q.group, q.query_id, self.cfg.method).exists()
               or any(o.group == q.group and o.query_id == q.query_id for o in self.outcomes)]
        groups = list(dict.fromkeys(q.group for q in ran))
        self.runner.cfg = self.cfg = replace(self.cfg, groups=groups, query_ids=sorted({q.query_id for q in ran}),
                                             limit=None)

    def close(self) -> None:
        """The end of the evaluation (every selected query written, or the process exits): steps.jsonl in its
        stable order, the tool server stopped, the folder's lock let go."""
        with self._lock:
            if self.write and self.cfg.run_dir.exists():
                self.runner.appends.close()
                collect_steps(self.cfg.run_dir)
            self._stack.close()
