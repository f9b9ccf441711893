"""Run a sweep's cells at the same time: each an ordinary run folder, run then judged by every judge.

One thread per cell (at most ``max_cells`` at once). The endpoints set the pace, not the cells: every model and
judge endpoint has one cap on requests in flight in this process (toolbench_adapter/net/inflight.py), shared by every
cell that asks it, so a cell that ends frees its share for the others, and each cell offers enough queries in
flight to fill its endpoints alone. Cells that differ only in the parser ask the model through one memo (the
parser fan-out's: runners/models/memo.py): a request two of them send is asked once.

A cell fails on its own (a dead endpoint, infrastructure failures in its run, a judge that gave no verdict): it
is marked failed in sweep.json with its reason and redo command, and the others go on. A cell done before (its
run and every judge's evaluation on disk) is skipped: nothing of it is rewritten.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from tqdm import tqdm

from toolbench_adapter.errors import InputError
from toolbench_adapter.report.sweep_record import DONE, FAILED, PENDING, RUNNING
from toolbench_adapter.runs.trial_set import is_trial_set, read_trials

from ..config import RunConfig
from ..execution.fanout import CountingBackend
from ..execution.preflight import make_backend
from ..execution.runner import Runner
from ..execution.trials import TrialSet
from ..judging.evaluate import evaluate_run
from ..judging.evaluate_trials import evaluate_trials
from ..models.memo import MemoBackend
from .spec import Cell
from .state import SweepState


@dataclass
class JudgePlan:
    """One judge of one cell: how to build its client, and tba evaluate's settings for it."""

    label: str
    build_client: Callable[[], Any]
    options: dict[str, Any] = field(default_factory=dict)  # evaluate_run's keywords (mode, evaluate_times, ...)
    urls: list[str] = field(default_factory=list)  # the judge endpoints it asks (openai), capped by the sweep
    recipe: Any = None  # judging/judge_ray.ChatRecipe: what the client is built from


@dataclass
class CellPlan:
    cell: Cell
    cfg: RunConfig  # out_root = the sweep's folder, name = the cell's
    judges: list[JudgePlan]
    redo: str  # the command that redoes this cell alone
    share_key: str | None = None  # cells with the same key ask the model through one memo
    queries: int = 0  # the query runs it makes (its selected queries x its trials; read while planning)
    query_keys: frozenset = frozenset()  # (group, query id) of its selected queries: what two cells share
    groups: list[str] = field(default_factory=list)  # their groups (the names of its label files)


DEFAULT_MAX_CELLS = 64  # cells at once unless told: each holds threads (its queries in flight) and a tool server


class CellFailed(Exception):
    """The reason a cell failed, as sweep.json and the summary say it."""


@dataclass
class CellResult:
    name: str
    state: str
    reason: str | None = None
    seconds: float = 0.0
    ran: bool = True  # False: done before, skipped
    line: str = ""


class StartGate:
    """The cells' start-ups one after another, in a given order, while the started cells run. A start-up is
    checks, preflights and the cell's tool server: work for the one interpreter lock, so eight started at once
    share it and none reaches its first model call before nearly all are ready; one at a time, the first cell's
    queries are in flight after an eighth of it, and the rest start while the endpoints serve them. The order
    takes each model endpoint in turn, so every endpoint gets a cell early. A cell that never says it started
    (it failed first, it was done before) lets the next one go when it ends; a start-up that takes longer than
    ``patience_s`` lets the next one go too."""

    def __init__(self, order: list[str], patience_s: float = 5.0):
        self.order = order
        self.patience_s = patience_s
        self._passed: set[str] = set()
        self._turn = 0
        self._changed = threading.Condition()

    def wait(self, name: str) -> None:
        deadline = time.monotonic() + self.patience_s
        with self._changed:
            while self._turn < len(self.order) and self.order[self._turn] != name:
                left = deadline - time.monotonic()
                if left <= 0:
                    deadline = time.monotonic() + self.patience_s  # the one ahead is slow: go, and so may the next
                    self.passed(self.order[self._turn])
                    continue
                self._changed.wait(left)

    def passed(self, name: str) -> None:
        """``name`` has started (or will not): the next in order may start."""
        with self._changed:
            self._passed.add(name)
            while self._turn < len(self.order) and self.order[self._turn] in self._passed:
                self._turn += 1
            self._changed.notify_all()


def start_order(plans: list[CellPlan]) -> list[str]:
    """The cells' names, each model endpoint (or in-process backend) in turn: a, b, a, b, ... not a, a, ..., b."""
    from .endpoints import model_urls

    queues: dict[str, list[str]] = {}
    for plan in plans:
        key = ",".join(model_urls(plan.cfg)) or plan.cfg.backend
        queues.setdefault(key, []).append(plan.cell.name)
    order = []
    while any(queues.values()):
        for names in queues.values():
            if names:
                order.append(names.pop(0))
    return order


class JudgingBar:
    """One evaluation's judging, told to the sweep's judging bar (passrate.JudgingProgress): its jobs added to the
    bar's total when planned, each judgement a step, the cell and judge in the postfix."""

    def __init__(self, scheduler: SweepScheduler, what: str):
        self.scheduler = scheduler
        self.what = what

    def planned(self, jobs: int) -> None:
        bar = self.scheduler.judging_bar()
        with self.scheduler._lock:
            bar.total += jobs
        bar.set_postfix_str(self.what, refresh=False)
        bar.refresh()

    def judged(self, count: int = 1) -> None:
        self.scheduler.judging_bar().update(count)


class SweepScheduler:
    def __init__(self, plans: list[CellPlan], state: SweepState, *, judge_cache: str, max_cells: int | None = None,
                 progress: bool = True, say: Callable[[str], None] = print, prices=None, tool_host=None):
        self.plans = plans
        self.state = state
        self.judge_cache = judge_cache
        self.prices = prices  # runs/cost.Prices: each cell's cost in money in its leaderboard CSV (else tokens only)
        self.max_cells = max_cells or max(1, min(len(plans), DEFAULT_MAX_CELLS))
        self.progress = progress
        self.say = say
        self.tool_host = tool_host  # one listener for the cells' embedded tool servers (server/runner.py EmbeddedHost)
        self._lock = threading.Lock()
        self._memos: dict[str, MemoBackend] = {}
        self._runners: list[Runner] = []
        # one evaluation at a time per judge: the next reads the verdicts the last one cached (cells that differ only
        # in the parser often hold the same answers), and each fills the judge endpoint's cap on its own
        self._judging: dict[str, threading.Lock] = {j.label: threading.Lock() for p in plans for j in p.judges}
        self.stopping = False  # Ctrl-C: start no cell, let each running one stop starting queries
        self.stopped_now = False  # a second Ctrl-C: the cells in flight are left as they are
        self._bar: tqdm | None = None
        self._judge_bar: tqdm | None = None
        self.gate = StartGate(start_order(plans))

    # -- what a cell needs ----------------------------------------------------------------------------------
    def done_before(self, plan: CellPlan) -> bool:
        """Recorded done, and its run (a set of trials: its record and all its trials) and every judge's evaluation
        still on disk."""
        record = self.state.cell(plan.cell.name)
        written = (is_trial_set(plan.cfg.run_dir) and read_trials(plan.cfg.run_dir)["trials"] == plan.cfg.trials
                   if plan.cfg.trials > 1 else (plan.cfg.run_dir / "manifest.json").is_file())
        if record.get("state") != DONE or not written:
            return False
        evaluations = record.get("evaluations") or {}
        return all(evaluations.get(j.label) and (plan.cfg.run_dir / "eval" / evaluations[j.label]).is_dir()
                   for j in plan.judges)

    def backend_for(self, plan: CellPlan) -> Any:
        """The cell's backend: its own (None: the Runner makes it), or a counter over its share group's memo."""
        if plan.share_key is None:
            return None
        with self._lock:
            memo = self._memos.get(plan.share_key)
            if memo is None:
                memo = self._memos[plan.share_key] = MemoBackend(make_backend(plan.cfg))
        return CountingBackend(memo)

    # -- one cell --------------------------------------------------------------------------------------------
    def run_cell(self, plan: CellPlan) -> CellResult:
        try:
            return self._run_cell(plan)
        finally:
            self.gate.passed(plan.cell.name)  # started or not, the next cell's start-up may go

    def _run_cell(self, plan: CellPlan) -> CellResult:
        name = plan.cell.name
        if self.done_before(plan):
            self._advance(plan.queries)
            return CellResult(name, DONE, ran=False, line=f"done before  {name} (nothing rewritten)")
        if self.stopping:
            return CellResult(name, PENDING, reason="not started: interrupted", ran=False)
        self.state.update(name, state=RUNNING, reason=None, redo=plan.redo)
        started = time.perf_counter()
        try:
            line = self._run_and_judge(plan)
            result = CellResult(name, DONE, seconds=time.perf_counter() - started, line=line)
        except CellFailed as exc:
            result = CellResult(name, FAILED, str(exc), time.perf_counter() - started)
        except InputError as exc:  # a dead endpoint found by the run's preflight, a refused run folder, ...
            result = CellResult(name, FAILED, " ".join(exc.message().split()), time.perf_counter() - started)
        except Exception as exc:  # a bug must not take the other cells down: said, with its traceback on disk
            log = plan.cfg.run_dir / "sweep-error.log"
            try:
                log.parent.mkdir(parents=True, exist_ok=True)
                log.write_text(traceback.format_exc(), encoding="utf-8")
            except OSError:
                pass
            result = CellResult(name, FAILED, f"harness error: {type(exc).__name__}: {exc} (traceback: {log})",
                                time.perf_counter() - started)
        if result.state == PENDING or (self.stopping and result.state == FAILED):
            result = CellResult(name, PENDING, "interrupted: the same command goes on", result.seconds)
        self.state.update(name, state=result.state, reason=result.reason, seconds=round(result.seconds, 2))
        if result.state == FAILED:
            result.line = f"FAILED       {name}: {result.reason}\n  redo: {plan.redo}"
        elif result.state == PENDING:
            result.line = f"interrupted  {name}"
        return result

    def _run_and_judge(self, plan: CellPlan) -> str:
        self.gate.wait(plan.cell.name)
        if plan.cfg.trials > 1:  # a set of trials (runners/execution/trials.py): the same driving, K trials
            runner = TrialSet(plan.cfg, backend=self.backend_for(plan), progress=False, command=plan.redo,
                              tool_host=self.tool_host)
        else:
            runner = Runner(plan.cfg, backend=self.backend_for(plan), progress=False, command=plan.redo,
                            tool_host=self.tool_host)
        runner.on_query_end = lambda ended: self._advance(ended if isinstance(ended, int) else 1)
        runner.on_started = lambda: self.gate.passed(plan.cell.name)
        with self._lock:
            self._runners.append(runner)
            if self.stopping:
                runner.stopping = True
        try:
            manifest = runner.run()
        finally:
            with self._lock:
                self._runners.remove(runner)
            close = getattr(runner.executor, "close", None)
            if callable(close) and plan.cfg.executor != "threads":  # Ray workers hold the cluster's CPUs: free them
                close()
        totals = manifest["totals"]
        if self.stopping:
            raise CellFailed("interrupted")
        if totals.get("infra_failures"):
            kinds = ", ".join(f"{k} {n}" for k, n in (totals.get("infra_failures_by_kind") or {}).items())
            raise CellFailed(f"{totals['infra_failures']} infrastructure failures ({kinds}): not judged; see "
                             f"{plan.cfg.run_dir}/errors.jsonl")
        evaluations: dict[str, str] = {}
        judged = []
        for judge in plan.judges:
            if self.stopping:
                raise CellFailed("interrupted")
            evaluate = evaluate_trials if plan.cfg.trials > 1 else evaluate_run
            with self._judging[judge.label]:
                told = JudgingBar(self, f"{plan.cell.name} by {judge.label}") if self.progress else False
                result = evaluate(plan.cfg.run_dir, judge.build_client(), cache_path=self.judge_cache,
                                  progress=told, preflight=True, command=plan.redo, prices=self.prices,
                                  **judge.options)
            if result.judge_failures:
                raise CellFailed(f"judge {judge.label}: {result.judge_failures} of {result.judgements} judgements "
                                 "gave no verdict (the judge endpoint after its retries, or no usable verdict)")
            evaluations[judge.label] = result.evaluation_id
            self.state.update(plan.cell.name, evaluations=dict(evaluations))
            judged.append(f"{judge.label}: {result.evaluation_id}")
        trials = f" ({plan.cfg.trials} trials)" if plan.cfg.trials > 1 else ""
        return (f"done         {plan.cell.name}: {totals['queries']} queries{trials}, {totals.get('model_calls', 0)} model "
                f"calls; " + (f"judged by {'; '.join(judged)}" if judged else "not judged (the spec's judges: [])"))

    # -- all cells -------------------------------------------------------------------------------------------
    def _advance(self, queries: int) -> None:
        if self._bar is not None:
            self._bar.update(queries)  # tqdm locks its own updates: the cells' threads call this

    def judging_bar(self) -> tqdm:
        """The second bar: every judgement of every cell, its total growing as each evaluation plans its jobs (the
        queries' bar stands at 100% while the last cells are judged: this one moves)."""
        with self._lock:
            if self._judge_bar is None:
                self._judge_bar = tqdm(total=0, desc="judging", unit="judgement", dynamic_ncols=True, file=sys.stderr,
                                       position=1, leave=True)
            return self._judge_bar

    def run(self) -> list[CellResult]:
        """Every cell, at most max_cells at once; one progress bar over all their queries, its postfix the cells
        ended, and once a cell is judged a second bar over the judgements."""
        results: list[CellResult] = []
        bar = self._bar = tqdm(total=sum(p.queries for p in self.plans), desc=f"sweep {self.state.record['name']}",
                               unit="query", disable=not self.progress, dynamic_ncols=True, file=sys.stderr)
        pool = ThreadPoolExecutor(max_workers=self.max_cells, thread_name_prefix="cell")
        by_name = {plan.cell.name: plan for plan in self.plans}
        # in the gate's order: with --max-cells below the count, the pool starts them in the order they may start
        futures = {pool.submit(self.run_cell, by_name[name]): by_name[name] for name in self.gate.order}
        try:
            for future in as_completed(futures):
                result = future.result()
                results.append(result)
                failed = sum(r.state == FAILED for r in results)
                bar.set_postfix_str(f"cells ended {len(results)}/{len(self.plans)}, failed {failed}")
                if result.line:
                    bar.write(result.line) if self.progress else self.say(result.line)
        except KeyboardInterrupt:  # the first: no more cells or queries start; the running ones end their queries
            self.stop()
            self.say("tba sweep: Ctrl-C: starting no more cells or queries; the queries in flight finish first "
                     "(Ctrl-C again stops at once; the same command goes on either way)")
            try:
                for future in futures:
                    if not future.cancel():
                        results.append(future.result())
            except KeyboardInterrupt:  # the second: leave now (the caller exits at once: os._exit)
                self.stopped_now = True
            raise
        finally:
            bar.close()
            if self._judge_bar is not None:
                self._judge_bar.close()
            pool.shutdown(wait=False, cancel_futures=True)
        order = {plan.cell.name: i for i, plan in enumerate(self.plans)}
        return sorted(results, key=lambda r: order[r.name])

    def shared_calls(self) -> list[dict]:
        """This session's memo groups: the cells that shared model calls, the calls that reached the model and
        the requests the memo answered (what separate runs would have asked again)."""
        groups = []
        for key, memo in self._memos.items():
            cells = [p.cell.name for p in self.plans if p.share_key == key]
            groups.append({"cells": cells, **memo.counts()})
        return groups

    def stop(self) -> None:
        with self._lock:
            self.stopping = True
            for runner in self._runners:
                runner.stopping = True
