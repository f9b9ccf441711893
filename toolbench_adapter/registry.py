"""Registries by name: parsers, dialects, model backends, simulators, judges.

One small thread-safe class. Entries are either objects or lazy "module:attr" strings (so importing the
registry does not import heavy backends). Third parties add entries through the entry point group
``toolbench_adapter.<kind>`` without editing the project. Unknown names raise with "did you mean".
"""

from __future__ import annotations

import difflib
import functools
import importlib
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

T = TypeVar("T")

ENTRY_POINT_PREFIX = "toolbench_adapter."


@functools.lru_cache(maxsize=1)
def installed_entry_points():
    """Every installed distribution's entry points, read once per process: each read scans every distribution's
    metadata (a few hundred files), and each registry's first use asked for its group with a scan of its own."""
    return entry_points()


class UnknownNameError(KeyError):
    """Raised for a name that is not registered; the message lists close matches and all choices."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._entry_points_loaded = False

    def register(self, name: str, obj: Any = None) -> Any:
        """``registry.register("x", obj)``, ``registry.register("x", "pkg.mod:attr")`` or as a decorator."""
        if obj is None:
            def decorator(target: Callable) -> Callable:
                self.register(name, target)
                return target
            return decorator
        with self._lock:
            self._entries[name] = obj
        return obj

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        with self._lock:
            if self._entry_points_loaded:
                return
            for ep in installed_entry_points().select(group=ENTRY_POINT_PREFIX + self.kind):
                self._entries.setdefault(ep.name, ep.value)
            self._entry_points_loaded = True

    def names(self) -> list[str]:
        self._load_entry_points()
        with self._lock:
            return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def get(self, name: str) -> T:
        self._load_entry_points()
        with self._lock:
            entry = self._entries.get(name)
        if entry is None:
            close = difflib.get_close_matches(name, self.names(), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            one = self.kind.replace("_", " ").removesuffix("s")  # kinds are plural: "parsers" -> "parser"
            raise UnknownNameError(
                f"unknown {one} {name!r}.{hint} Known {one}s: {', '.join(self.names())}"
            )
        if isinstance(entry, str):
            module_name, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module_name), attr) if attr else importlib.import_module(module_name)
            with self._lock:
                self._entries[name] = entry
        return entry
