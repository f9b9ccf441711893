"""What a run knows of how its setup stands against the StableToolBench leaderboard's, recorded in its
manifest as ``setup_facts`` (toolbench_adapter/evaluation/comparability.py turns them, with the judge of an
evaluation, into the "comparable with the StableToolBench leaderboard" line): the agent (the backend and the
model it ran, or the recordings it replayed), the queries (StableToolBench's by digest or not), the tool
documents (how many of the tools the queries use the tool folder documents: queryset/tool_coverage.py), the tool
responses (the server's hits and misses and who made each answer, summed over every session: server/stats.py's
``made_by``) and the method. Kept apart from the manifest's other fields so each part can change alone."""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests
from tqdm import tqdm

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.comparability import ENDPOINTS, RESPONSE_COUNTS, add_endpoints, run_notice
from toolbench_adapter.evaluation.stb_queries import classify_queries, merge_queries
from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.queryset.queries import resolve_root
from toolbench_adapter.queryset.tool_coverage import ToolCoverage, merge_coverage, tool_coverage
from toolbench_adapter.structured.describe import policy_of

from ..config import select_queries
from ..models.outside_agent import agent_label

FIELD = "setup_facts"
PROBE_TIMEOUT_S = 2.0
COUNTS = RESPONSE_COUNTS
MADE_BY = "made_by"  # simulator -> answers it made that the server served (server/stats.py)


def _server_get(url: str, path: str) -> dict | None:
    """GET /stats or /health beside a /virtual URL; None when the server has none (upstream's has neither)."""
    parts = urlsplit(url)
    target = urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    try:  # PROBE_TIMEOUT_S bounds the whole request (net/deadline.py): a server that trickles its reply ends too
        with EnvCachedSession() as session:
            reply = session.get(target, timeout=PROBE_TIMEOUT_S)
        data = json.loads(reply.content[:1_000_000]) if reply.status_code == 200 else None
    except (requests.RequestException, ValueError):
        return None
    return data if isinstance(data, dict) else None


class ToolServerProbe:
    """The counts a tool server reports over one session: the embedded server's own, an external one's /stats
    (read before and after: it may have served others), and what it says answers misses (/health)."""

    def __init__(self, urls: list[str], embedded=None, simulator: str | None = None):
        self.urls = urls
        self.embedded = embedded
        self.simulator = simulator
        self.start: dict | None = None
        self.endpoints: list[dict] = []  # an external server's simulator endpoint, as its /health says it
        self.begun = False
        self.ended: dict | None = None

    def _stats(self) -> dict | None:
        if self.embedded is not None:
            return self.embedded.stats.snapshot()
        found = [_server_get(url, "/stats") for url in self.urls]
        if not found or any(s is None for s in found):
            return None
        counts: dict[str, Any] = {k: sum(int(s.get(k) or 0) for s in found) for k in COUNTS}
        # who made the answers: a server that does not say (an older one) leaves it unknown
        counts[MADE_BY] = (None if any(not isinstance(s.get(MADE_BY), dict) for s in found)
                           else add_made_by([s[MADE_BY] for s in found]))
        return counts

    def begin(self) -> None:
        self.begun = True
        self.start = self._stats()
        if self.urls:
            health = [_server_get(url, "/health") or {} for url in self.urls]
            if self.simulator is None:
                names = {h.get("simulator") for h in health}
                self.simulator = names.pop() if len(names) == 1 and None not in names else None
            # tba serve's check of its llm / mirrorapi endpoint (model, host, listed, prompt): its own account
            self.endpoints = add_endpoints([], [h.get("simulator_endpoint") for h in health])

    def end(self) -> dict | None:
        """The session's counts (session()), read once however often asked; None before begin()."""
        if self.begun and self.ended is None:
            self.ended = self.session()
        return self.ended

    def session(self) -> dict:
        end = self._stats()
        counts: dict[str, Any] = dict.fromkeys((*COUNTS, MADE_BY))
        if end is not None and (self.embedded is not None or self.start is not None):
            start = self.start or {}
            counts = {k: int(end.get(k) or 0) - int(start.get(k) or 0) for k in COUNTS}
            made, before = end.get(MADE_BY), start.get(MADE_BY, {}) if start else {}
            counts[MADE_BY] = None if not isinstance(made, dict) or not isinstance(before, dict) else {
                name: n for name, n in ((k, int(v) - int(before.get(k) or 0)) for k, v in made.items()) if n}
        return {"simulator": self.simulator, ENDPOINTS: self.endpoints, **counts}


def add_made_by(parts: list) -> dict | None:
    """simulator -> answers, added up; None when one part is unknown."""
    if any(not isinstance(p, dict) for p in parts):
        return None
    total: dict[str, int] = {}
    for part in parts:
        for name, count in part.items():
            total[str(name)] = total.get(str(name), 0) + int(count or 0)
    return dict(sorted((k, v) for k, v in total.items() if v))


def tool_responses(cfg, session: dict | None, previous: dict | None, endpoint: dict | None = None) -> dict:
    """The server, what answers misses, the hits and who made the answers over every session (an interrupted one
    included: runner.py reads the server before it records the interruption); None where a session's are
    unknown. ``session`` None: no session has ended since ``previous`` (a session starting). ``endpoint``: what
    the embedded server's llm / mirrorapi endpoint was checked to be this session (preflight.simulator_endpoint);
    every session's endpoint is kept (a rerun may ask another host), an external server's from its /health."""
    old = previous if isinstance(previous, dict) else {}
    embedded = cfg.server == "embedded"
    facts = {"server": "embedded" if embedded else cfg.server,
             "simulator": cfg.simulator if embedded else (session or {}).get("simulator", old.get("simulator")),
             "cache_dir": cfg.cache_dir if embedded else None}
    for key in COUNTS:
        before = old.get(key, 0) if old else 0
        now = (session or {}).get(key, 0) if session is not None else 0
        facts[key] = None if before is None or now is None else before + now
    before = old.get(MADE_BY, {}) if old else {}  # a run recorded before made_by was: unknown
    if old and MADE_BY not in old:
        before = {} if not old.get("requests") else None
    now = (session or {}).get(MADE_BY, {}) if session is not None else {}
    facts[MADE_BY] = add_made_by([before, now])
    found = [endpoint] if embedded else list((session or {}).get(ENDPOINTS) or [])
    facts[ENDPOINTS] = add_endpoints(old.get(ENDPOINTS) or [], found)
    return facts


def agent_facts(run) -> dict:
    """The agent: the backend, the model it asked (a replay: the recordings it replays)."""
    backend = run.cfg.backend
    facts = {"backend": backend, "model": run.effective_model()}
    folders = getattr(run.backend, "folders", None)
    if backend == "replay" and folders:
        facts["replays"] = [str(f) for f in folders]
    return facts


def tool_root_of(cfg) -> str | None:
    """The tool folder the prompts' descriptions come from: --tool-root, else $TBA_TOOL_ROOT (toolset.py's rule)."""
    return cfg.tool_root or os.environ.get("TBA_TOOL_ROOT") or None


def coverage_of(cfg) -> ToolCoverage | None:
    """The coverage of the run's selected queries by its tool documents; None when the queries cannot be read."""
    try:
        queries = select_queries(cfg)
    except (InputError, OSError, ValueError, KeyError):
        return None
    return tool_coverage(queries, tool_root_of(cfg))


def measured_coverage(cfg) -> ToolCoverage | None:
    """The run's coverage (coverage_of); a tool document its prompts need that cannot be read (a FIFO, binary, too
    big, a link loop) is exit 2 naming it (and how many more), before any query."""
    coverage = coverage_of(cfg)
    if coverage is None or not coverage.unreadable:
        return coverage
    name, problem = next(iter(coverage.unreadable.items()))
    path, _, why = problem.partition(": ")
    more = len(coverage.unreadable) - 1
    raise InputError(f"tool document of {name} unreadable: {why}" + (f" ({more} more unreadable)" if more else ""),
                     path=path, field="--tool-root",
                     fix="restore the file from the tool environment release, or remove it (the prompt then reads "
                     "no description for that tool)")


def say_before_run(manifest: dict, todo: list, who: str = "tba run") -> None:
    """Before the first query of a session with queries to run: what makes its setup not the leaderboard's, in
    one line on stderr (comparability.run_notice), and the run goes on. ``who``: the command speaking (tba eval
    runs a run too)."""
    notice = run_notice(manifest.get(FIELD))
    if notice and todo:
        tqdm.write(f"{who}: {notice}", file=sys.stderr)


def setup_facts(cfg, previous: dict | None, session: dict | None = None, *, agent: dict | None = None,
                coverage: ToolCoverage | None = None, endpoint: dict | None = None) -> dict:
    """The run's setup facts over ``previous`` (the manifest's, from earlier sessions); ``session``: the tool
    server's counts of the session that just ended (ToolServerProbe.session); ``agent``: agent_facts of the run;
    ``coverage``: the tool documents' coverage when the caller has it (else measured here); ``endpoint``: the
    embedded simulator's endpoint as checked this session."""
    old = previous.get(FIELD) if isinstance(previous, dict) and isinstance(previous.get(FIELD), dict) else {}
    try:
        queries = merge_queries(old.get("queries"), classify_queries(select_queries(cfg), resolve_root(cfg.stb_root)))
    except (InputError, OSError, ValueError, KeyError):
        queries = old.get("queries")  # the query files cannot be read here: what earlier sessions recorded
    coverage = coverage if coverage is not None else coverage_of(cfg)
    earlier = old.get("tool_documents")
    if coverage is None:
        documents = earlier or {"tool_root": tool_root_of(cfg), "found": False, "tools": None, "covered": None}
    elif isinstance(earlier, dict) and isinstance(earlier.get("used"), list):
        # the worst over the sessions: a tool missing when earlier answers were written stays missing for them
        documents = merge_coverage([earlier, coverage.as_facts()])
        late = set(documents["missing"]) - set(coverage.missing)
        if late:  # the verdict says why documents now in the folder are still counted missing
            documents["missing_earlier"] = len(late)
    else:
        documents = coverage.as_facts()
    return {"agent": agent if agent is not None else old.get("agent"),
            "queries": queries,
            "tool_documents": documents,
            "tool_responses": tool_responses(cfg, session, old.get("tool_responses"), endpoint),
            "method": {"method": cfg.method, **policy_of(cfg.as_dict()),
                       # an outside agent (tba run --agent): the comparability line names it, not the method
                       **({"agent": agent_label(cfg.agent)} if getattr(cfg, "agent", None) else {})}}
