"""Which tools a set of queries uses, and which of them the tool folder documents (issue 40): the figure behind
the tool-documents condition of the comparability line, `tba doctor`'s line and a run's notice before its first
query ("1 of 814 tools").

A query's tools are those its api_list names, as build_toolset looks them up for the prompt's description line:
``{tool_root}/{category}/{tool}.json`` (the standard tool name; a recorded function list's own names). A tool is
covered when that document is a JSON object the run can read. One that is there but cannot be read is named with
why, never opened when it is not a regular file (a FIFO would block the reader, /dev/zero fill memory), never
read past its size limit (files/input_files.py), and never a traceback: not UTF-8, not JSON, nested too deeply, a link loop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files.input_files import UnreadableFile, read_json
from ..naming import standardize

SHOWN = 5  # missing tools named in a line; the rest counted


def tools_of(query: Any) -> set[tuple[str, str]]:
    """(category, tool document name) of every tool a query's prompt describes (queryset/toolset.py's lookup)."""
    if getattr(query, "functions", None) is not None:  # a recorded function list: its api entries' own names
        return {(str(api["category_name"]), str(api["tool_name"])) for api in query.api_list
                if "function_name" in api}
    return {(str(api.get("category_name", "")), standardize(str(api.get("tool_name", "")))) for api in query.api_list}


def read_tool_document(path: Path) -> tuple[dict | None, str | None]:
    """(document, None), (None, None) when there is none, or (None, why it cannot be read): read through the one
    reader of input files (files/input_files.py, kind "tool document"), which refuses special files, sizes past its
    limit, bytes that are not UTF-8 JSON and link loops without opening or reading them whole."""
    try:
        data = read_json(path, "tool document")
    except UnreadableFile as exc:
        if exc.reason == "not_found":
            return None, None
        return None, f"{path}: {exc.problem}"
    if not isinstance(data, dict):
        return None, f"{path}: not a JSON object"
    return data, None


@dataclass(frozen=True)
class ToolCoverage:
    tool_root: str | None
    used: tuple[str, ...]  # "Category/tool" of every tool the queries use, sorted
    missing: tuple[str, ...]  # of those, the ones without a readable document
    unreadable: dict[str, str] = field(default_factory=dict)  # "Category/tool" -> why its document cannot be read
    found: bool = False  # the tool folder exists

    @property
    def covered(self) -> int:
        return len(self.used) - len(self.missing)

    @property
    def complete(self) -> bool:
        return bool(self.used) and not self.missing

    def figure(self) -> str:
        return coverage_figure(self.as_facts())

    def as_facts(self) -> dict:
        return {"tool_root": self.tool_root, "found": self.found, "tools": len(self.used), "covered": self.covered,
                "used": list(self.used), "missing": list(self.missing), "unreadable": dict(self.unreadable)}


def tool_coverage(queries, tool_root: str | Path | None) -> ToolCoverage:
    """The coverage of ``queries`` (Query objects) by the documents under ``tool_root`` (None: none given;
    $TBA_TOOL_ROOT is the caller's to resolve)."""
    used = sorted({f"{category}/{tool}" for query in queries for category, tool in tools_of(query)})
    root = Path(tool_root).expanduser() if tool_root else None
    found = root is not None and root.is_dir()
    missing: list[str] = []
    unreadable: dict[str, str] = {}
    for name in used:
        if not found:
            missing.append(name)
            continue
        category, _, tool = name.partition("/")
        data, problem = read_tool_document(root / category / f"{tool}.json")
        if data is None:
            missing.append(name)
            if problem:
                unreadable[name] = problem
    return ToolCoverage(str(tool_root) if tool_root else None, tuple(used), tuple(missing), unreadable, found)


def coverage_figure(facts: dict, note: str = "") -> str:
    """"1 of 814 tools (NOTE; missing: A, B, C, D, E and 808 more; 1 unreadable, e.g. PATH: why)" from recorded
    facts."""
    total, covered = facts.get("tools"), facts.get("covered")
    if not isinstance(total, int) or not isinstance(covered, int):
        return "coverage not recorded"
    parts = [note] if note else []
    missing = [str(m) for m in facts.get("missing") or []]
    if missing:
        shown = ", ".join(missing[:SHOWN]) + (f" and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
        parts.append(f"missing: {shown}")
        unreadable = facts.get("unreadable") or {}
        if isinstance(unreadable, dict) and unreadable:
            parts.append(f"{len(unreadable)} unreadable, e.g. {next(iter(unreadable.values()))}")
    return f"{covered} of {total} tools" + (f" ({'; '.join(parts)})" if parts else "")


def merge_coverage(parts: list[dict]) -> dict:
    """One coverage over shards (tba merge): the tools any shard uses, missing where a shard found it missing."""
    parts = [p for p in parts if isinstance(p, dict)]
    if not parts or any(not isinstance(p.get("used"), list) for p in parts):
        return {**(parts[0] if parts else {}), "tools": None, "covered": None}  # an older shard: not known
    used = sorted({str(name) for p in parts for name in p["used"]})
    missing = sorted({str(name) for p in parts for name in p.get("missing") or []})
    unreadable = {k: v for p in parts for k, v in (p.get("unreadable") or {}).items()}
    return {"tool_root": parts[0].get("tool_root"), "found": all(p.get("found") for p in parts), "tools": len(used),
            "covered": len(used) - len(missing), "used": used, "missing": missing, "unreadable": unreadable}
