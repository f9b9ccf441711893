"""A backend wrapper that asks the model once per distinct request (the parser fan-out shares it).

With deterministic decoding the same request always gets the same completion, so runs that differ only
in how they parse (``tba run --parsers``) can share every model call up to the turn where their
trajectories diverge. The key is the exact request: prompt or messages, native tools, stop strings,
max_tokens, temperature, the backend extras (prefill) and the replay key. Sampling (temperature > 0) is
refused: a memo would silently turn N samples into one.

Completions that carry an error are handed back but not kept: a separate run would have asked again.
Concurrent identical requests wait for the first one instead of asking the model twice.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from concurrent.futures import Future
from dataclasses import asdict, replace
from typing import Any

from .base import Completion, ModelRequest


class SamplingNotMemoizable(ValueError):
    """A request with temperature > 0: its completions are samples, not a function of the request."""


def request_key(request: ModelRequest) -> str:
    """A digest of everything in the request that can change the completion."""
    text = json.dumps(asdict(request), sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class MemoBackend:
    """Wraps any backend; ``hits`` and ``misses`` (= calls that reached the model) are counted."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._entries: dict[str, Future] = {}

    def __getattr__(self, name: str) -> Any:  # name, model, natural_dialect, ... of the wrapped backend
        return getattr(self.inner, name)

    def preflight(self) -> None:
        self.inner.preflight()

    def complete(self, request: ModelRequest) -> Completion:
        if request.temperature and request.temperature > 0:
            raise SamplingNotMemoizable(f"temperature {request.temperature} > 0: completions are samples")
        key = request_key(request)
        with self._lock:
            entry = self._entries.get(key)
            owner = entry is None
            if owner:
                entry = self._entries[key] = Future()
                self.misses += 1
            else:
                self.hits += 1
        if owner:
            try:
                completion = self.inner.complete(request)
            except BaseException as exc:
                self._forget(key)
                entry.set_exception(exc)
                raise
            if completion.error:
                self._forget(key)
            entry.set_result(completion)
        return _copy(entry.result())

    def _forget(self, key: str) -> None:
        with self._lock:
            self._entries.pop(key, None)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {"model_calls": self.misses, "memo_hits": self.hits}


def _copy(completion: Completion) -> Completion:
    """Each caller gets its own lists and dicts: one variant must not see another's edits."""
    return replace(completion, tool_calls=copy.deepcopy(completion.tool_calls))
