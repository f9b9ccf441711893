"""Search methods, registered by name: how a query's tree is walked and what answer file it becomes.

A run is "queries x method": the method string (``CoT@2``, ``DFS_woFilter_w2``) is a registered family name
followed by the method's own suffix, which the method parses. Adding a method is one module with a class of
this shape plus one registry line here (or an entry point in the group ``toolbench_adapter.search_methods``,
without editing the project):

    class MyMethod:
        family = "My"                  # the registered name: method strings start with it
        form, example = "My@N", "My@1"  # for messages
        name: str                      # the method string this instance was parsed from (file names use it)

        @classmethod
        def parse(cls, name: str) -> MyMethod | None: ...    # None: not this family's form; InputError: a bad value
        def search(self, agent, ctx, new_root, limits: SearchLimits) -> dict: ...  # the query's answer file

``search`` gets one Agent (one model turn on a tree node: search/agent.py), the query's QueryContext, a
``new_root()`` that makes a fresh tree root (the query's first messages and tool environment) and the run's
limits; it returns the upstream answer file as a dict (answers/write.py builds the shared shapes). It does no
I/O: the run (execution/) writes the files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from toolbench_adapter.errors import InputError
from toolbench_adapter.registry import Registry

from .agent import Agent, QueryContext
from .tree import Node


@dataclass(frozen=True)
class SearchLimits:
    """What bounds one query's search, from the run's settings."""

    max_step: int = 12  # depth limit
    max_query_count: int = 200  # model-call cap (DFSDT; CoT: its re-asks stop there)
    compat: Any = None  # toolbench_adapter.compat.Compat: the DFSDT flags of an older ToolBench
    seed: int = 42


class SearchMethod(Protocol):
    family: str
    form: str
    example: str
    name: str

    @classmethod
    def parse(cls, name: str) -> SearchMethod | None: ...

    def search(self, agent: Agent, ctx: QueryContext, new_root: Callable[[], Node], limits: SearchLimits) -> dict: ...


# family name -> method class or "module:attr"; entry point group toolbench_adapter.search_methods
SEARCH_METHODS: Registry[type] = Registry("search_methods")
SEARCH_METHODS.register("CoT", "runners.search.cot:CoT")
SEARCH_METHODS.register("DFS_woFilter", "runners.search.dfs:DFSWoFilter")


def known_forms() -> str:
    """"CoT@N (e.g. CoT@1) or DFS_woFilter_wN (e.g. DFS_woFilter_w2)": every registered method, for messages."""
    forms = []
    for family in SEARCH_METHODS.names():
        try:  # `tba run --help` lists them: a plug-in that fails to import must not break every command
            method = SEARCH_METHODS.get(family)
        except Exception as exc:  # noqa: BLE001 (any import error of a third party's module)
            forms.append(f"{family}... (cannot be loaded: {type(exc).__name__}: {exc})")
            continue
        forms.append(f"{method.form} (e.g. {method.example})")
    return ", ".join(forms[:-1]) + " or " + forms[-1] if len(forms) > 1 else "".join(forms)


def parse_method(name: str) -> SearchMethod:
    """The search method a method string names; InputError (field ``method``) for one no method reads."""
    for family in sorted(SEARCH_METHODS.names(), key=len, reverse=True):  # the longest family name first
        if name.startswith(family):
            method = SEARCH_METHODS.get(family).parse(name)
            if method is not None:
                return method
    raise InputError(f"unknown method {name!r}", field="method", fix=f"use {known_forms()}")


def suffix_number(name: str, method: type, number: str) -> int:
    """A method's count (N of CoT@N, DFS_woFilter_wN), at least 1: a count of 0 would run no chain and no
    expansion, so write empty answers."""
    value = int(number)
    if value < 1:
        raise InputError(f"method {name!r}: {method.form} needs N >= 1", field="method",
                         fix="use e.g. " + " or ".join(SEARCH_METHODS.get(f).example for f in SEARCH_METHODS.names()))
    return value
