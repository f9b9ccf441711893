"""A run: queries x method x model x dialect x parser against a tool server.

Concurrency over queries, resume (finished queries are skipped), atomic files (a run killed at any
moment loses at most the queries in flight), shards, a progress bar, and a manifest that records
everything that defines the run plus what it cost.

Every query ends "finished" (the model's own success or failure: an answer file at the upstream path) or
"infra_failure" (model endpoint, tool server, replay gap, harness error: no answer file, so rerunning the
same command redoes it; its partial tree goes to failed/). Both are counted and named in the manifest.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

import toolbench_adapter
from toolbench_adapter.answers.write import answer_path, write_json_atomic
from toolbench_adapter.dialects import make_dialect
from toolbench_adapter.env import ToolEnv
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.counts import answer_flags, count, read_query_lines
from toolbench_adapter.fileio import write_text_atomic
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.parsers import PARSERS
from toolbench_adapter.queries import Query, QuerySet
from toolbench_adapter.structured.rates import query_stats, total_stats
from toolbench_adapter.toolset import build_toolset

from .agent import Agent, QueryContext
from .chain import run_cot
from .config import RunConfig
from .dfs import run_dfs
from .executors import make_executor
from .interrupt import CtrlC, StopNow
from .models import BACKENDS
from .models.base import Completion, natural_dialect
from .outcome import FAILED_DIR, FINISHED_FIELDS, HARNESS_ERROR, INFRA_FAILURE, InfraFailure
from .runlock import RunFolderLock
from .structured import make_structured
from .trajectory import cot_file, dfs_file

MANIFEST = "manifest.json"
STEPS = "steps.jsonl"
STEPS_DIR = "steps"
QUERY_STATS = "queries.jsonl"
ERRORS = "errors.jsonl"
DEFAULT_DIALECT = "toolllama"


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


def iso_time(seconds: float) -> str:
    """A Unix time as ISO 8601 in UTC, e.g. 2026-11-23T13:30:47Z."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def reads_native_calls(parser_name: str) -> bool:
    return hasattr(PARSERS.get(parser_name)(), "parse_message")


def make_parse(parser_name: str) -> Callable[[Completion], Any]:
    parser = PARSERS.get(parser_name)()
    if hasattr(parser, "parse_message"):  # native tool calls: parse the message, not its text
        return lambda completion: parser.parse_message(completion.message())
    return lambda completion: parser.parse(completion.text or "")


def fit_dialect(cfg: RunConfig, backend: Any) -> RunConfig:
    """The config with its dialect settled: the one given, else the backend's natural one, else toolllama.
    A parser that cannot read what the backend answers (native tool calls vs text) is refused here, before
    the run spends anything: every step would otherwise end as empty_output."""
    natural = natural_dialect(backend)
    cfg = replace(cfg, dialect=cfg.dialect or natural or DEFAULT_DIALECT)
    try:
        dialect = make_dialect(cfg.dialect, **cfg.dialect_options)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), field="dialect_options", fix="check --dialect-option names and values") from None
    check_backend_takes(backend, dialect, cfg.backend)
    if not natural:
        return cfg
    parser = cfg.parser or dialect.default_parser
    fitting = make_dialect(natural).default_parser
    if reads_native_calls(parser) == reads_native_calls(fitting):
        return cfg
    says = "native tool calls" if reads_native_calls(fitting) else "text"
    reads = "native tool calls" if reads_native_calls(parser) else "text"
    name = getattr(backend, "name", cfg.backend)
    fix = f"pass --dialect {natural} (or leave --dialect out)" if cfg.dialect != natural else ""
    if cfg.parser:
        fix += (" and " if fix else "") + f"a parser of {says}, e.g. --parser {fitting} (or leave --parser out)"
    raise InputError(f"the {name} backend answers with {says} (its dialect: {natural}), but the parser "
                     f"{parser} of dialect {cfg.dialect} reads {reads}: every step would be unreadable",
                     field="dialect", fix=fix)


def check_backend_takes(backend: Any, dialect: Any, backend_name: str) -> None:
    """A dialect that renders chat messages needs a backend that accepts them (openai-completions takes a
    text prompt only), and one that sends native tools needs a backend that passes them to the model (hf has
    no native tools): otherwise every turn fails the same way, so refuse before the run."""
    messages, tools = dialect.sends()
    name = getattr(backend, "name", backend_name)
    if messages and getattr(backend, "accepts_messages", True) is False:
        raise InputError(f"the {name} backend takes a text prompt, but the {dialect.name} dialect renders chat "
                         "messages", field="dialect",
                         fix="pass --dialect toolllama (a text prompt), or use --backend openai-chat for chat dialects")
    if not messages and getattr(backend, "accepts_prompt", True) is False:
        raise InputError(f"the {name} backend takes chat messages, but the {dialect.name} dialect renders a text "
                         "prompt", field="dialect",
                         fix="pass --dialect-option template=chat (toolllama over chat) or a chat dialect, or use "
                         "--backend openai-completions for a text prompt")
    if tools and getattr(backend, "supports_tools", True) is False:
        raise InputError(f"the {name} backend has no native tool calls, but the {dialect.name} dialect sends "
                         "native tools", field="dialect",
                         fix="pass a text dialect (--dialect toolllama, json-object, jsonl or hermes)")


def make_backend(cfg: RunConfig):
    options = {k: v for k, v in (("model", cfg.model), ("base_url", cfg.base_url), ("api_key", cfg.api_key))
               if v is not None}
    return BACKENDS.get(cfg.backend)(**options, **cfg.backend_options)


def code_version() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True,
                             text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return f"toolbench-adapter {toolbench_adapter.__version__}" + (f" ({rev})" if rev else "")


def select_queries(cfg: RunConfig) -> list[Query]:
    queries = QuerySet(cfg.stb_root)
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


def is_finished(path: Path) -> bool:
    """An answer file counts as finished when it parses: files are written whole or not at all."""
    try:
        with open(path, encoding="utf-8") as handle:
            return "answer_generation" in json.load(handle)
    except (OSError, ValueError):
        return False


class Runner:
    def __init__(self, cfg: RunConfig, backend=None, server_url: str | None = None, progress: bool = True,
                 client_options: dict | None = None, command: str | None = None, executor=None):
        cfg.validate()
        self.kind, self.method_arg = cfg.method_parts()
        self.backend = backend if backend is not None else make_backend(cfg)
        cfg = fit_dialect(cfg, self.backend)
        self.cfg = cfg
        self.compat = cfg.compat_settings()
        self.dialect = make_dialect(cfg.dialect, **cfg.dialect_options)
        self.parser_name = cfg.parser or self.dialect.default_parser
        self.parse = make_parse(self.parser_name)
        # native tools with a JSON response mode refused; --constrain / --on-invalid (runners/structured.py)
        self.structured = make_structured(cfg, self.backend, self.dialect)
        self.server_url = server_url
        # tool-server client settings beyond the config's (tests: a short backoff)
        self.client_options = {"timeout_s": cfg.server_timeout, "attempts": cfg.server_attempts,
                               **(client_options or {})}
        self.progress = progress
        self.command = command  # the command line that started this session (the manifest keeps it: redo hint)
        # how queries are spread (runners/executors.py): threads here, or Ray workers; made now so a missing
        # extra is exit 2 before anything is written
        self.executor = executor if executor is not None else make_executor(cfg)
        self.run_dir = cfg.run_dir
        self._lock = threading.Lock()
        # set when too many queries in a row failed for infrastructure reasons: queries not yet started are
        # then recorded as failures of that kind without a model or tool call (a dead server costs nothing more)
        self.halt: InfraFailure | None = None
        self._streak = 0
        self.stopping = False  # set by a first Ctrl-C: queries not started yet are skipped (not recorded)

    # -- the tool server ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def tool_server(self):
        if self.server_url:
            yield self.server_url
            return
        if self.cfg.server != "embedded":
            yield self.cfg.server
            return
        from toolbench_adapter.queries import resolve_root
        from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
        from toolbench_adapter.server.runner import EmbeddedServer

        server = build_virtual_server(ServerConfig(
            cache_dir=self.cfg.cache_dir, tools_dir=self.cfg.tool_root, stb_root=resolve_root(self.cfg.stb_root),
            simulator=self.cfg.simulator, save=self.cfg.cache_dir is not None, compat=self.compat))
        with EmbeddedServer(create_app(server)) as embedded:
            yield embedded.url

    # -- one query --------------------------------------------------------------------------------------
    def run_query(self, query: Query, client, on_call=None) -> QueryOutcome | None:
        """Run one query and write its files; never raises (a Python exception is a harness_error). None: not
        started, because a Ctrl-C came first (nothing recorded; a rerun runs it)."""
        if self.stopping:
            return None
        if self.halt is not None:
            return self.not_started(query)
        started = time.perf_counter()
        roots: list = []  # the search trees so far, for the partial tree of a failed query
        ctx: QueryContext | None = None
        try:
            toolset = build_toolset(query, self.cfg.flavour, self.compat, tool_root=self.cfg.tool_root)
            ctx = QueryContext(toolset=toolset, group=query.group, method=self.cfg.method, seed=self.cfg.seed)
            data = self._search(toolset, ctx, client, on_call, roots)
            return self._write_query(query, ctx, data, time.perf_counter() - started)
        except Exception as exc:  # a bug or an unexpected failure: record it, keep the run going
            failure = InfraFailure(HARNESS_ERROR, f"{type(exc).__name__}: {exc}")
            data = {"traceback": traceback.format_exc(), "trees": _trees(roots)}
            return self._write_query(query, ctx, data, time.perf_counter() - started, failure)

    def _search(self, toolset, ctx: QueryContext, client, on_call, roots: list) -> dict:
        agent = Agent(backend=self.backend, dialect=self.dialect, parse=self.parse, max_tokens=self.cfg.max_tokens,
                      temperature=self.cfg.temperature, on_call=on_call, structured=self.structured)

        def new_root():
            from .tree import Node
            env = ToolEnv(toolset, client, self.compat, max_observation_length=self.cfg.max_observation_length)
            roots.append(Node.root(initial_messages(toolset), env))
            return roots[-1]

        if self.kind == "cot":
            result = run_cot(agent, ctx, new_root, pass_at=self.method_arg, max_step=self.cfg.max_step)
            return cot_file(result, ctx, self.cfg)
        result = run_dfs(agent, ctx, new_root(), width=self.method_arg, max_step=self.cfg.max_step,
                         max_query_count=self.cfg.max_query_count,
                         dead_end_back_length=2 if self.compat.dfs_dead_end_backtracks_two else 1)
        return dfs_file(result, ctx, self.cfg, random.Random(self.cfg.seed))

    def failed_path(self, group: str, query_id: int) -> Path:
        return self.run_dir / FAILED_DIR / group / f"{query_id}_{self.cfg.method}.json"

    def steps_path(self, group: str, query_id: int) -> Path:
        return self.run_dir / STEPS_DIR / group / f"{query_id}_{self.cfg.method}.jsonl"

    def _publish_steps_of(self, group: str, query_id: int) -> None:
        """The driver's share under Ray: a worker wrote the query's step file, the driver appends it."""
        with contextlib.suppress(FileNotFoundError):
            self._publish_steps(self.steps_path(group, query_id).read_text(encoding="utf-8"))

    def _publish_steps(self, text: str) -> None:
        """A query's step records appended to steps.jsonl as it ends, in one write: a run killed at any moment
        leaves every ended query's records readable there. The end of the run rewrites the file in a stable
        order, and a resumed run first rebuilds it from the per-query files (no line twice, none torn)."""
        if not text:
            return
        data = text.encode("utf-8")
        with self._lock:
            fd = os.open(self.run_dir / STEPS, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
            try:
                while data:
                    data = data[os.write(fd, data):]
            finally:
                os.close(fd)

    def _write_query(self, query: Query, ctx: QueryContext | None, data: dict, wall_s: float,
                     failure: InfraFailure | None = None) -> QueryOutcome:
        failure = failure or (ctx.infra_failure if ctx else None)
        # an infrastructure failure has no answer: none of its flags count (counts.py defines them)
        flags = answer_flags(data) if failure is None else {"valid_data": False, "answered": False, "win": False}
        budget = ctx.budget if ctx else None
        stats = {"group": query.group, "query_id": query.query_id, "method": self.cfg.method,
                 "query_count": budget.query_count if budget else 0,
                 "total_tokens": budget.total_tokens if budget else 0,
                 "model_seconds": round(budget.model_seconds, 4) if budget else 0.0,
                 "env_seconds": round(budget.env_seconds, 4) if budget else 0.0,
                 "wall_seconds": round(wall_s, 4), **flags,
                 # model requests the endpoint refused as longer than the model's context (the model's limit)
                 "context_length": ctx.context_length if ctx else 0,
                 # model turns, the valid ones, re-asks (toolbench_adapter/structured/rates.py)
                 **query_stats(ctx.records if ctx else []),
                 **(failure.as_fields() if failure else FINISHED_FIELDS)}
        # step records first (the query's own file, then steps.jsonl), the answer file last: an answer file on
        # disk means the query is complete and its records are readable in steps.jsonl
        if ctx is not None:
            text = "".join(json.dumps(r) + "\n" for r in ctx.records)
            write_text_atomic(self.steps_path(query.group, query.query_id), text)
            self._publish_steps(text)
        failed_path = self.failed_path(query.group, query.query_id)
        if failure is not None:  # no answer file: a rerun of the same command redoes this query
            write_json_atomic(failed_path, {**data, "infra_failure": failure.as_fields()})
        else:
            write_json_atomic(answer_path(self.run_dir, query.group, query.query_id, self.cfg.method), data)
            failed_path.unlink(missing_ok=True)  # an earlier session's failure, now redone
        # the stats line right after the file, from this worker: a kill in between loses no finished query's
        # line (and _recover_stats mends the microseconds that remain)
        self._record_outcome(stats, failure)
        return QueryOutcome(query.group, query.query_id, answered=flags["answered"], valid=flags["valid_data"],
                            failure=failure, stats=stats)

    # -- the whole run -----------------------------------------------------------------------------------
    def pending(self) -> tuple[list[Query], int]:
        selected = select_queries(self.cfg)
        todo = [q for q in selected
                if not is_finished(answer_path(self.run_dir, q.group, q.query_id, self.cfg.method))]
        pending_keys = {(q.group, q.query_id) for q in todo}
        self._recover_stats([q for q in selected if (q.group, q.query_id) not in pending_keys])
        return todo, len(selected) - len(todo)

    def _recover_stats(self, finished: list[Query]) -> None:
        """A finished answer file whose queries.jsonl line was lost (the process killed between the two
        writes) gets its line back from the file itself, marked ``recovered``: the totals never undercount."""
        path = self.run_dir / QUERY_STATS
        known: set[tuple] = set()
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError, KeyError, TypeError):
                    record = json.loads(line)
                    known.add((record["group"], record["query_id"]))
        for query in finished:
            if (query.group, query.query_id) in known:
                continue
            data = json.loads(answer_path(self.run_dir, query.group, query.query_id, self.cfg.method)
                              .read_text(encoding="utf-8"))
            generation = data["answer_generation"]
            self._append(QUERY_STATS, {
                "group": query.group, "query_id": query.query_id, "method": self.cfg.method,
                "query_count": generation.get("query_count", 0), "total_tokens": generation.get("total_tokens", 0),
                "model_seconds": 0.0, "env_seconds": 0.0, "wall_seconds": 0.0, **answer_flags(data),
                "recovered": True, **FINISHED_FIELDS})

    def effective_model(self) -> str:
        """The model this run asks: --model, else the name the backend settled on (the one the endpoint serves,
        adopted by the preflight), else the backend's name."""
        return (self.cfg.model or getattr(self.backend, "model", None) or getattr(self.backend, "model_name", None)
                or self.cfg.backend)

    def check_manifest(self, model: str | None = None) -> dict | None:
        """The manifest of the run already in the folder, refused when it defines another run: a run folder
        holds one model, one method, one set of settings. ``model``: the model this run asks (None: not known
        yet, before the preflight; the other settings are checked)."""
        path = self.run_dir / MANIFEST
        if not path.exists():
            return None
        try:
            previous = json.loads(path.read_text())
        except ValueError:
            return None
        old = RunConfig.defining_of(previous.get("config", {}))
        old["model"] = previous.get("model") or old["model"]  # the model that ran, --model given or not
        new = {**self.cfg.defining(), "model": model}
        changed = {k: (old.get(k), v) for k, v in new.items() if old.get(k) != v and not (k == "model" and v is None)}
        if not changed:
            return previous
        details = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items() if k != "model")
        if "model" not in changed:
            raise InputError(f"{self.run_dir} holds a different run ({details})",
                             path=path, fix="choose another --name, or delete that folder to start over")
        ran, asks = changed["model"]
        source = "given by --model" if self.cfg.model else "the model the endpoint serves: no --model given"
        raise InputError(f"{self.run_dir} holds a run of model {ran!r}, but this command asks {asks!r} ({source})"
                         + (f"; other settings differ too ({details})" if details else "")
                         + ": a run folder holds one model, one method, one set of settings", path=path,
                         field="model", fix=f"to go on with {ran!r}, pass --model {ran} with an endpoint that serves "
                         f"it; for {asks!r}, choose another --name")

    def run(self) -> dict:
        """Run the pending queries, holding the run folder's lock (another command writing the folder: exit 2
        naming it). Ctrl-C: no query starts, those in flight finish, the session is recorded as interrupted;
        a second Ctrl-C raises StopNow at once (the queries in flight recorded as not finished)."""
        with RunFolderLock(self.run_dir, self.command):
            return self._run()

    def _run(self) -> dict:
        self.check_manifest(self.cfg.model)  # the settings, before any endpoint is asked
        self.backend.preflight()
        if self.structured is not None:  # a backend that cannot constrain: exit 2 before any query
            self.structured.check_backend(self.backend)
        previous = self.check_manifest(self.effective_model())  # the model the endpoint serves, now known
        todo, done_before = self.pending()
        # steps.jsonl from the per-query files of what stays (an interrupted session's appends may be torn or
        # repeat a query that runs again): this session appends each query's records as it ends
        if (self.run_dir / STEPS_DIR).is_dir():
            collect_steps(self.run_dir, skip={self.steps_path(q.group, q.query_id) for q in todo})
        started = time.time()
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
                # the session is recorded only now: a refused preflight leaves no session that reads as interrupted
                try:
                    write_json_atomic(self.run_dir / MANIFEST, manifest)
                except OSError as exc:  # a file in the way, a read-only place: say so before any query runs
                    raise InputError(f"cannot write the run folder ({exc.strerror or exc})", path=self.run_dir,
                                     fix="choose a writable --out-root, or another --name") from None
                with CtrlC(lambda: len(self.executor.in_flight()), self._stop_starting) as ctrl_c:
                    stream = self.executor.map(self, todo, client)
                    for query, outcome in stream:
                        if outcome is None:  # not started: Ctrl-C came first
                            continue
                        # run_query records its own outcome and exceptions, unless writing that record failed too
                        # (or the executor lost the query: a Ray worker that died more often than its retries)
                        if not isinstance(outcome, QueryOutcome):
                            outcome = self._unrecorded_failure(query, outcome)
                            self._record_outcome(outcome.stats, outcome.failure)
                        outcomes.append(outcome)
                        tally.add(outcome)
                        bar.update(1)
                        bar.set_postfix_str(tally.text(), refresh=False)
                if ctrl_c.pressed:  # the queries in flight have finished: the session ends as interrupted
                    raise KeyboardInterrupt
                endpoints = self.executor.endpoint_stats(self, client)  # requests served / failed per endpoint
            except KeyboardInterrupt as exc:
                bar.close()
                self._record_interruption(manifest, exc, outcomes, todo, done_before, started)
                raise
            finally:
                bar.close()
                if stream is not None:
                    stream.close()  # after a second Ctrl-C: lets go of the queries in flight without waiting
                client.close()
        collect_steps(self.run_dir)
        _remove_empty_dirs(self.run_dir / FAILED_DIR)  # redone failures leave their folders behind
        manifest = self._manifest(manifest, finished=time.time(), outcomes=outcomes, skipped=done_before,
                                  seconds=time.time() - started)
        manifest["sessions"][-1].update(executor=self.executor.name, endpoints=endpoints)
        if self.halt is not None:
            manifest["sessions"][-1]["halted"] = (
                f"{sum(bool(o.stats.get('not_started')) for o in outcomes)} queries not started after "
                f"{self.cfg.stop_after_infra_failures} in a row failed ({self.halt.kind}); "
                f"--stop-after-infra-failures sets the limit")
        write_json_atomic(self.run_dir / MANIFEST, manifest)
        return manifest

    def _stop_starting(self) -> None:
        """The first Ctrl-C: no query starts from now on (threads skip them, ray dispatches no more)."""
        self.stopping = True

    def _record_interruption(self, manifest: dict, exc: KeyboardInterrupt, outcomes: list[QueryOutcome],
                             todo: list[Query], skipped: int, started: float) -> None:
        """Ctrl-C: the session gets ``interrupted`` (its time) and no ``finished``, so tba evaluate reads the run
        as interrupted; its counts so far and the totals are recorded. After a second Ctrl-C (StopNow) the
        queries still in flight are named in ``not_finished``: no answer file, so a rerun redoes them."""
        stop_now = isinstance(exc, StopNow)
        in_flight = [f"{q.group}/{q.query_id}" for q in self.executor.in_flight()] if stop_now else []
        if stop_now:
            exc.in_flight = in_flight
        else:  # the files are whole: steps.jsonl in its stable order (a stop now leaves the appended one)
            collect_steps(self.run_dir)
        now = time.time()
        manifest = self._manifest(manifest, ended=now, outcomes=outcomes, skipped=skipped, seconds=now - started)
        manifest["sessions"][-1].update(
            interrupted=iso_time(now), stopped_now=stop_now, not_finished=in_flight,
            not_started=max(0, len(todo) - len(outcomes) - len(in_flight)), executor=self.executor.name)
        write_json_atomic(self.run_dir / MANIFEST, manifest)

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
        self._record_outcome(outcome.stats, outcome.failure)
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
            tqdm.write(f"tba run: {self._streak} queries in a row failed ({failure.kind}): starting no more "
                       "queries; fix the cause and rerun the same command", file=sys.stderr)

    def _record_outcome(self, stats: dict, failure: InfraFailure | None) -> None:
        """queries.jsonl gets every query's line; errors.jsonl every infrastructure failure's."""
        with self._lock:
            self._watch_streak(stats, failure)
        self._append(QUERY_STATS, stats)
        if failure is not None:
            self._append(ERRORS, {**{k: stats[k] for k in ("group", "query_id", "method")},
                                  **failure.as_fields(), "time": iso_time(time.time()),
                                  "partial": str(self.failed_path(stats["group"], stats["query_id"]))})

    def _append(self, name: str, record: dict) -> None:
        with self._lock:
            path = self.run_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def _manifest(self, previous: dict | None, started: float | None = None, finished: float | None = None,
                  outcomes: list[QueryOutcome] | None = None, skipped: int = 0, seconds: float = 0.0,
                  ended: float | None = None) -> dict:
        """``finished``: the session ran to its end; ``ended``: it was interrupted then (counts, no "finished")."""
        manifest = dict(previous or {})
        manifest.update({
            "name": self.cfg.name,
            "config": self.cfg.as_dict(),
            "model": self.effective_model(),
            "backend": self.cfg.backend,
            "dialect": self.dialect.describe(),
            "parser": self.parser_name,
            "compat": self.cfg.compat_settings().as_dict(),
            "code_version": code_version(),
            "seed": self.cfg.seed,
        })
        if started is not None:
            manifest.setdefault("sessions", []).append({"started": iso_time(started), "command": self.command})
        if (finished is not None or ended is not None) and manifest.get("sessions"):
            outcomes = outcomes or []
            failures = Counter(o.failure.kind for o in outcomes if o.failure is not None)
            manifest["sessions"][-1].update({
                **({"finished": iso_time(finished)} if finished is not None else {}), "seconds": round(seconds, 3),
                "ran": len(outcomes), "skipped_as_done": skipped,
                "queries_finished": sum(o.finished for o in outcomes),
                "infra_failures": sum(failures.values()), "infra_failures_by_kind": dict(sorted(failures.items())),
                "failed": sum(failures.values())})  # older readers' name for the same count
        manifest["totals"] = summarize(self.run_dir, self.cfg.method)
        return manifest


class ProgressTally:
    """The progress bar's counts, updated one outcome at a time."""

    def __init__(self) -> None:
        self.finished = self.answered = 0
        self.failures: Counter = Counter()

    def add(self, outcome: QueryOutcome) -> None:
        self.finished += outcome.finished
        self.answered += outcome.answered
        if outcome.failure is not None:
            self.failures[outcome.failure.kind] += 1

    def text(self) -> str:
        """finished=5 answered=4 infra=2 (tool_server 2): the bar names every infrastructure failure as it happens."""
        text = f"finished={self.finished} answered={self.answered} infra={sum(self.failures.values())}"
        if self.failures:
            text += " (" + ", ".join(f"{kind} {n}" for kind, n in sorted(self.failures.items())) + ")"
        return text


def progress_postfix(outcomes: list[QueryOutcome]) -> str:
    tally = ProgressTally()
    for outcome in outcomes:
        tally.add(outcome)
    return tally.text()


def summarize(run_dir: Path, method: str) -> dict:
    """Totals over every query stats line of the run (all sessions), latest line per query wins: a query
    that failed and was redone counts once, as what it is now. valid / answered / win count finished
    queries only; model calls and tokens count every query's latest attempt (what it cost)."""
    records = read_query_lines(run_dir / QUERY_STATS)
    model_s = [r["model_seconds"] / r["query_count"] for r in records if r.get("query_count")]
    return {
        **count(records).as_dict(),  # queries, finished, infra failures, valid, answered, win: counts.py
        # finished queries in which the endpoint refused a request as longer than the model's context
        "context_length": sum(bool(r.get("context_length")) for r in records if r.get("outcome") != INFRA_FAILURE),
        **total_stats(records),  # model turns, valid ones, re-asks
        "model_calls": sum(r["query_count"] for r in records),
        "total_tokens": sum(r["total_tokens"] for r in records),
        "median_model_seconds_per_call": round(statistics.median(model_s), 4) if model_s else None,
        "median_query_wall_seconds": round(statistics.median([r["wall_seconds"] for r in records]), 4)
        if records else None,
    }


def collect_steps(run_dir: Path, skip: set[Path] | frozenset = frozenset()) -> Path:
    """steps.jsonl at the run root: every per-query step file joined (but those in ``skip``), in a stable order."""
    target = run_dir / STEPS
    lines: list[str] = []
    for path in sorted((run_dir / STEPS_DIR).glob("*/*.jsonl")):
        if path in skip:
            continue
        lines.extend(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    write_text_atomic(target, "".join(line + "\n" for line in lines))
    return target


def _remove_empty_dirs(root: Path) -> None:
    for folder in sorted(root.glob("*"), reverse=True) + [root]:
        with contextlib.suppress(OSError):  # not empty, or not there
            folder.rmdir()


def _trees(roots: list) -> list:
    """The partial trees of a query that raised; a tree that cannot be written is named, not lost silently."""
    trees = []
    for root in roots:
        try:
            trees.append(root.to_json(with_children=True))
        except Exception as exc:  # the same bug may sit in the serialiser
            trees.append({"unwritable": f"{type(exc).__name__}: {exc}"})
    return trees

