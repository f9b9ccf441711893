"""A run: queries x method x model x dialect x parser against a tool server.

Concurrency over queries, resume (finished queries are skipped), atomic files (a run killed at any
moment loses at most the queries in flight), shards, a progress bar, and a manifest that records
everything that defines the run plus what it cost.
"""

from __future__ import annotations

import contextlib
import json
import random
import statistics
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

import toolbench_adapter
from toolbench_adapter.answers.write import answer_path, write_json_atomic
from toolbench_adapter.compat import Compat
from toolbench_adapter.dialects import make_dialect
from toolbench_adapter.env import ToolEnv
from toolbench_adapter.errors import InputError
from toolbench_adapter.fileio import write_text_atomic
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.parsers import PARSERS
from toolbench_adapter.queries import Query, QuerySet
from toolbench_adapter.toolset import build_toolset

from .agent import Agent, QueryContext
from .chain import run_cot
from .config import RunConfig
from .dfs import run_dfs
from .models import BACKENDS
from .models.base import Completion
from .trajectory import cot_file, dfs_file

MANIFEST = "manifest.json"
STEPS = "steps.jsonl"
STEPS_DIR = "steps"
QUERY_STATS = "queries.jsonl"
ERRORS = "errors.jsonl"


@dataclass
class QueryOutcome:
    group: str
    query_id: int
    answered: bool = False
    valid: bool = False
    error: str | None = None
    stats: dict = field(default_factory=dict)


def make_parse(parser_name: str) -> Callable[[Completion], Any]:
    parser = PARSERS.get(parser_name)()
    if hasattr(parser, "parse_message"):  # native tool calls: parse the message, not its text
        return lambda completion: parser.parse_message(completion.message())
    return lambda completion: parser.parse(completion.text or "")


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
    def __init__(self, cfg: RunConfig, backend=None, server_url: str | None = None, progress: bool = True):
        cfg.validate()
        self.cfg = cfg
        self.kind, self.method_arg = cfg.method_parts()
        self.compat = Compat.from_mode(cfg.compat)
        self.dialect = make_dialect(cfg.dialect, **cfg.dialect_options)
        self.parser_name = cfg.parser or self.dialect.default_parser
        self.parse = make_parse(self.parser_name)
        self.backend = backend if backend is not None else make_backend(cfg)
        self.server_url = server_url
        self.progress = progress
        self.run_dir = cfg.run_dir
        self._lock = threading.Lock()

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
    def run_query(self, query: Query, client, on_call=None) -> QueryOutcome:
        started = time.perf_counter()
        toolset = build_toolset(query, self.cfg.flavour, self.compat, tool_root=self.cfg.tool_root)
        ctx = QueryContext(toolset=toolset, group=query.group, method=self.cfg.method, seed=self.cfg.seed)
        agent = Agent(backend=self.backend, dialect=self.dialect, parse=self.parse, max_tokens=self.cfg.max_tokens,
                      temperature=self.cfg.temperature, on_call=on_call)

        def new_root():
            from .tree import Node
            env = ToolEnv(toolset, client, self.compat, max_observation_length=self.cfg.max_observation_length)
            return Node.root(initial_messages(toolset), env)

        if self.kind == "cot":
            result = run_cot(agent, ctx, new_root, pass_at=self.method_arg, max_step=self.cfg.max_step)
            data = cot_file(result, ctx, self.cfg)
        else:
            result = run_dfs(agent, ctx, new_root(), width=self.method_arg, max_step=self.cfg.max_step,
                             max_query_count=self.cfg.max_query_count)
            data = dfs_file(result, ctx, self.cfg, random.Random(self.cfg.seed))
        generation = data["answer_generation"]
        stats = {"group": query.group, "query_id": query.query_id, "query_count": ctx.budget.query_count,
                 "total_tokens": ctx.budget.total_tokens, "model_seconds": round(ctx.budget.model_seconds, 4),
                 "env_seconds": round(ctx.budget.env_seconds, 4),
                 "wall_seconds": round(time.perf_counter() - started, 4), "win": data["win"],
                 "valid_data": generation["valid_data"]}
        # step records first, the answer file last: an answer file on disk means the query is complete
        steps_path = self.run_dir / STEPS_DIR / query.group / f"{query.query_id}_{self.cfg.method}.jsonl"
        _write_lines_atomic(steps_path, ctx.records)
        write_json_atomic(answer_path(self.run_dir, query.group, query.query_id, self.cfg.method), data)
        answered = generation["valid_data"] and "give_answer" in generation["final_answer"]
        return QueryOutcome(query.group, query.query_id, answered=answered, valid=generation["valid_data"],
                            stats=stats)

    # -- the whole run -----------------------------------------------------------------------------------
    def pending(self) -> tuple[list[Query], int]:
        selected = select_queries(self.cfg)
        todo = [q for q in selected
                if not is_finished(answer_path(self.run_dir, q.group, q.query_id, self.cfg.method))]
        return todo, len(selected) - len(todo)

    def check_manifest(self) -> dict | None:
        path = self.run_dir / MANIFEST
        if not path.exists():
            return None
        try:
            previous = json.loads(path.read_text())
        except ValueError:
            return None
        old = previous.get("config", {})
        changed = {k: (old.get(k), v) for k, v in self.cfg.defining().items() if old.get(k) != v}
        if changed:
            details = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items())
            raise InputError(f"{self.run_dir} holds a different run ({details})",
                             path=path, fix="choose another --name, or delete that folder to start over")
        return previous

    def run(self) -> dict:
        previous = self.check_manifest()
        todo, done_before = self.pending()
        self.backend.preflight()
        manifest = self._manifest(previous, started=time.time())
        write_json_atomic(self.run_dir / MANIFEST, manifest)
        outcomes: list[QueryOutcome] = []
        counts = Counter()
        bar = tqdm(total=len(todo), desc=f"{self.cfg.name} {self.cfg.method}", unit="query",
                   disable=not self.progress, dynamic_ncols=True)
        with self.tool_server() as url:
            from toolbench_adapter.server.client import ServerClient

            client = ServerClient(url, rate_per_s=self.cfg.server_rate)
            try:
                with ThreadPoolExecutor(max_workers=self.cfg.concurrency) as pool:
                    futures = {pool.submit(self.run_query, q, client): q for q in todo}
                    for future in as_completed(futures):
                        query = futures[future]
                        try:
                            outcome = future.result()
                        except Exception as exc:  # a bug or an unexpected failure: keep going, record it
                            outcome = QueryOutcome(query.group, query.query_id, error=f"{type(exc).__name__}: {exc}")
                            self._append(ERRORS, {"group": query.group, "query_id": query.query_id,
                                                  "error": outcome.error, "time": time.time()})
                        else:
                            self._append(QUERY_STATS, outcome.stats)
                        outcomes.append(outcome)
                        counts["finished"] += outcome.error is None
                        counts["answered"] += outcome.answered
                        counts["failed"] += outcome.error is not None
                        bar.update(1)
                        bar.set_postfix(finished=counts["finished"], answered=counts["answered"],
                                        failed=counts["failed"])
            finally:
                bar.close()
                client.close()
        collect_steps(self.run_dir)
        manifest = self._manifest(manifest, finished=time.time(), outcomes=outcomes, skipped=done_before)
        write_json_atomic(self.run_dir / MANIFEST, manifest)
        return manifest

    def _append(self, name: str, record: dict) -> None:
        with self._lock:
            path = self.run_dir / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")

    def _manifest(self, previous: dict | None, started: float | None = None, finished: float | None = None,
                  outcomes: list[QueryOutcome] | None = None, skipped: int = 0) -> dict:
        manifest = dict(previous or {})
        manifest.update({
            "name": self.cfg.name,
            "config": self.cfg.as_dict(),
            "model": self.cfg.model or getattr(self.backend, "model", None) or getattr(self.backend, "model_name", None)
            or self.cfg.backend,
            "backend": self.cfg.backend,
            "dialect": self.dialect.describe(),
            "parser": self.parser_name,
            "compat": Compat.from_mode(self.cfg.compat).as_dict(),
            "code_version": code_version(),
            "seed": self.cfg.seed,
        })
        if started is not None:
            manifest.setdefault("sessions", []).append({"started": started})
        if finished is not None and manifest.get("sessions"):
            session = manifest["sessions"][-1]
            session.update({"finished": finished, "ran": len(outcomes or []), "skipped_as_done": skipped,
                            "failed": sum(o.error is not None for o in outcomes or [])})
        manifest["totals"] = summarize(self.run_dir, self.cfg.method)
        return manifest


def summarize(run_dir: Path, method: str) -> dict:
    """Totals over every query stats line of the run (all sessions), latest line per query wins."""
    latest: dict[tuple, dict] = {}
    path = run_dir / QUERY_STATS
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                latest[(record["group"], record["query_id"])] = record
    records = list(latest.values())
    model_s = [r["model_seconds"] / r["query_count"] for r in records if r.get("query_count")]
    return {
        "queries": len(records),
        "valid": sum(r["valid_data"] for r in records),
        "win": sum(bool(r["win"]) for r in records),
        "model_calls": sum(r["query_count"] for r in records),
        "total_tokens": sum(r["total_tokens"] for r in records),
        "median_model_seconds_per_call": round(statistics.median(model_s), 4) if model_s else None,
        "median_query_wall_seconds": round(statistics.median([r["wall_seconds"] for r in records]), 4)
        if records else None,
    }


def collect_steps(run_dir: Path) -> Path:
    """steps.jsonl at the run root: every per-query step file joined, in a stable order."""
    target = run_dir / STEPS
    lines: list[str] = []
    for path in sorted((run_dir / STEPS_DIR).glob("*/*.jsonl")):
        lines.extend(line for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    write_text_atomic(target, "".join(line + "\n" for line in lines))
    return target


def _write_lines_atomic(path: Path, records: list[dict]) -> None:
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in records))
