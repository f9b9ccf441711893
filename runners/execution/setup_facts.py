"""What a run knows of how its setup stands against the StableToolBench leaderboard's, recorded in its
manifest as ``setup_facts`` (toolbench_adapter/evaluation/comparability.py turns them, with the judge of an
evaluation, into the "comparable with the StableToolBench leaderboard" line): the queries (StableToolBench's
by digest or not), tool documents, tool responses (cache hits the server reported, what answered the misses)
and the method. Kept apart from the manifest's other fields so each part can change alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import requests

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.comparability import RESPONSE_COUNTS, classify_queries, merge_queries
from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.queryset.queries import resolve_root
from toolbench_adapter.structured.describe import policy_of

from ..config import select_queries
from ..models.outside_agent import agent_label

FIELD = "setup_facts"
PROBE_TIMEOUT_S = 2.0
COUNTS = RESPONSE_COUNTS


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
        self.begun = False

    def _stats(self) -> dict | None:
        if self.embedded is not None:
            return self.embedded.stats.snapshot()
        found = [_server_get(url, "/stats") for url in self.urls]
        if not found or any(s is None for s in found):
            return None
        return {k: sum(int(s.get(k) or 0) for s in found) for k in COUNTS}

    def begin(self) -> None:
        self.begun = True
        self.start = self._stats()
        if self.simulator is None and self.urls:
            names = {(_server_get(url, "/health") or {}).get("simulator") for url in self.urls}
            self.simulator = names.pop() if len(names) == 1 and None not in names else None

    def session(self) -> dict:
        end = self._stats()
        counts: dict[str, Any] = dict.fromkeys(COUNTS)
        if end is not None and (self.embedded is not None or self.start is not None):
            start = self.start or {}
            counts = {k: int(end.get(k) or 0) - int(start.get(k) or 0) for k in COUNTS}
        return {"simulator": self.simulator, **counts}


def tool_responses(cfg, session: dict | None, previous: dict | None) -> dict:
    """The server, what answers misses and the hits over every session (None where a session's are unknown)."""
    old = previous if isinstance(previous, dict) else {}
    embedded = cfg.server == "embedded"
    facts = {"server": "embedded" if embedded else cfg.server,
             "simulator": cfg.simulator if embedded else (session or {}).get("simulator", old.get("simulator")),
             "cache_dir": cfg.cache_dir if embedded else None}
    for key in COUNTS:
        before = old.get(key, 0) if old else 0
        now = (session or {}).get(key, 0) if session is not None else 0
        facts[key] = None if before is None or now is None else before + now
    return facts


def setup_facts(cfg, previous: dict | None, session: dict | None = None) -> dict:
    """The run's setup facts over ``previous`` (the manifest's, from earlier sessions); ``session``: the tool
    server's counts of the session that just ended (ToolServerProbe.session)."""
    old = previous.get(FIELD) if isinstance(previous, dict) and isinstance(previous.get(FIELD), dict) else {}
    try:
        queries = merge_queries(old.get("queries"), classify_queries(select_queries(cfg), resolve_root(cfg.stb_root)))
    except (InputError, OSError, ValueError, KeyError):
        queries = old.get("queries")  # the query files cannot be read here: what earlier sessions recorded
    tool_root = cfg.tool_root
    return {"queries": queries,
            "tool_documents": {"tool_root": tool_root, "found": bool(tool_root) and Path(tool_root).is_dir()},
            "tool_responses": tool_responses(cfg, session, old.get("tool_responses")),
            "method": {"method": cfg.method, **policy_of(cfg.as_dict()),
                       # an outside agent (tba run --agent): the comparability line names it, not the method
                       **({"agent": agent_label(cfg.agent)} if getattr(cfg, "agent", None) else {})}}
