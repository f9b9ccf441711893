"""A Query -> the functions the model sees, their routes to the server, and the task description.

Exact to upstream (rapidapi_multithread.py: api_json_to_openai_json, rapidapi_wrapper.__init__); the
function lists built here equal ``answer_generation.function`` of released answer files byte for byte.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.compat import STB, Compat
from toolbench_adapter.errors import InputError
from toolbench_adapter.naming import function_name, pure_api_name, standardize
from toolbench_adapter.protocol import functions as P
from toolbench_adapter.protocol.prompts import TASK_DESCRIPTION_HEAD, TOOL_DESCRIPTION_MAX_LENGTH
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.tool_coverage import read_tool_document

FLAVOURS = ("legacy", "current")


@dataclass(frozen=True)
class Route:
    """Where a function call goes on the /virtual server (names as upstream sends them)."""

    category: str  # the query's category_name, verbatim
    tool_name: str  # standard tool name (tool-env file stem)
    api_name: str  # untruncated pure api name


@dataclass
class Toolset:
    query: Query
    flavour: str
    functions: list[dict]  # exactly as sent to the model / stored in answer files
    routes: dict[str, Route]  # function name -> route (Finish has none)
    tool_descriptions: dict[str, str | None] = field(default_factory=dict)  # standard tool name -> desc

    @property
    def inner_functions(self) -> list[dict]:
        """The bare function dicts (the ``function`` part of current-flavour tools)."""
        return [f["function"] if "function" in f else f for f in self.functions]

    @property
    def names(self) -> list[str]:
        return [f["name"] for f in self.inner_functions]

    @property
    def openai_tools(self) -> list[dict]:
        """Native-tools payload: always wrapped ``{"type": "function", "function": ...}``."""
        return [f if "function" in f else {"type": "function", "function": f} for f in self.functions]

    def task_description(self) -> str:
        lines = [TASK_DESCRIPTION_HEAD]
        for number, (tool, desc) in enumerate(self.tool_descriptions.items(), start=1):
            lines.append(f"{number}.{tool}: {desc}\n")
        return "".join(lines)


def api_to_function(api: dict, standard_tool_name: str, flavour: str = "legacy", compat: Compat = STB) -> dict:
    """One api_list entry -> one function dict (inner dict; wrapped for the current flavour)."""
    name = function_name(api["api_name"], standard_tool_name)
    lead = [""] if flavour == "current" else []  # STB HEAD starts both lists with an empty string
    parameters: dict[str, Any] = {"type": "object", "properties": {}, "required": list(lead), "optional": list(lead)}
    required = api.get("required_parameters") or []
    optional = api.get("optional_parameters") or []
    if required or not compat.drop_optional_without_required:
        for param in required:
            key = _add_parameter(parameters["properties"], param)
            parameters["required"].append(key)
        for param in optional:
            key = _add_parameter(parameters["properties"], param)
            parameters["optional"].append(key)
    function = {
        "name": name,
        "description": P.FUNCTION_DESCRIPTION_HEAD.format(tool=standard_tool_name),
        "parameters": parameters,
    }
    api_description = api.get("api_description")
    if isinstance(api_description, str) and api_description.strip():
        text = api_description.strip().replace(api["api_name"], name)[: P.DESCRIPTION_MAX_LENGTH]
        function["description"] += P.FUNCTION_DESCRIPTION_TAIL.format(description=text)
    if flavour == "current":
        return {"type": "function", "function": function}
    return function


def _add_parameter(properties: dict, param: dict) -> str:
    key = pure_api_name(str(param.get("name", "")))
    value: dict[str, Any] = {
        "type": P.TYPE_MAP.get(param.get("type"), P.TYPE_DEFAULT),
        "description": str(param.get("description") or "")[: P.DESCRIPTION_MAX_LENGTH],
    }
    default = param.get("default")
    if len(str(default)) != 0:  # upstream test: str(None) == "None" counts as an example value
        value["example_value"] = default
    properties[key] = value
    return key


def finish_function(flavour: str = "legacy") -> dict:
    finish = P.finish_function()
    return {"type": "function", "function": finish} if flavour == "current" else finish


def build_toolset(query: Query, flavour: str = "legacy", compat: Compat = STB,
                  tool_root: str | Path | None = None) -> Toolset:
    """Functions (Finish last), routes and tool descriptions for one query."""
    if flavour not in FLAVOURS:
        raise InputError(f"unknown flavour {flavour!r}", field="flavour", fix=f"choose one of {', '.join(FLAVOURS)}")
    env = ToolEnvironment.resolve(tool_root)
    if query.functions is not None:
        return _recorded_toolset(query, env)
    functions: list[dict] = []
    routes: dict[str, Route] = {}
    descriptions: dict[str, str | None] = {}
    for api in query.api_list:
        tool = standardize(api["tool_name"])
        function = api_to_function(api, tool, flavour, compat)
        inner = function.get("function", function)
        functions.append(function)
        routes[inner["name"]] = Route(category=api["category_name"], tool_name=tool,
                                      api_name=pure_api_name(api["api_name"]))
        if tool not in descriptions:
            descriptions[tool] = env.tool_description(api["category_name"], tool) if env else None
    functions.append(finish_function(flavour))
    return Toolset(query=query, flavour=flavour, functions=functions, routes=routes,
                   tool_descriptions=descriptions)


def function_list(query: Query, flavour: str = "legacy", compat: Compat = STB) -> list[dict]:
    """The functions build_toolset sends for ``query`` (equal to its ``functions``), without reading any tool
    description: what a query's identity digests (queryset/query_identity.py)."""
    if query.functions is not None:
        return query.functions
    return [*(api_to_function(api, standardize(api["tool_name"]), flavour, compat) for api in query.api_list),
            finish_function(flavour)]


def _recorded_toolset(query: Query, env: ToolEnvironment | None) -> Toolset:
    """A function list recorded in an answer file, sent verbatim (whatever the flavour asked: the recording
    decides); routes from the api_list entries that name their ``function_name``."""
    routes: dict[str, Route] = {}
    descriptions: dict[str, str | None] = {}
    for api in query.api_list:
        if "function_name" not in api:
            continue
        routes[api["function_name"]] = Route(category=api["category_name"], tool_name=api["tool_name"],
                                             api_name=api["api_name"])
        if api["tool_name"] not in descriptions:
            descriptions[api["tool_name"]] = env.tool_description(api["category_name"], api["tool_name"]) if env else None
    flavour = "current" if any("function" in f for f in query.functions) else "legacy"
    return Toolset(query=query, flavour=flavour, functions=_copied(query.functions), routes=routes,
                   tool_descriptions=descriptions)


def _copied(functions: list) -> list:
    """A deep copy of recorded functions: through JSON (C, one level of recursion per level of nesting), so a
    schema ~300 levels deep is copied (deepcopy spends ~4 Python frames a level and ran out); anything not JSON
    data by deepcopy."""
    try:
        return json.loads(json.dumps(functions))
    except (TypeError, ValueError):
        return copy.deepcopy(functions)


def functions_json(toolset: Toolset) -> str:
    """The function list as JSON text, keys in upstream order (as answer files store it)."""
    return json.dumps(toolset.functions, indent=2, ensure_ascii=False)


_ENVIRONMENTS: dict[str, ToolEnvironment] = {}  # tool folder as given -> its environment (its tool descriptions, read once)


class ToolEnvironment:
    """``toolenv/tools/{Category}/{standard_tool_name}.json``: only tool descriptions are read here."""

    def __init__(self, root: Path):
        self.root = root
        self._descriptions: dict[tuple[str, str], str | None] = {}  # only what queries read: a tool file is big

    @classmethod
    def resolve(cls, tool_root: str | Path | None) -> ToolEnvironment | None:
        chosen = tool_root or os.environ.get("TBA_TOOL_ROOT")
        if not chosen:
            return None
        known = _ENVIRONMENTS.get(str(chosen))
        if known is not None:  # one per folder for the process: each tool file read once, not once per query
            return known
        path = Path(chosen).expanduser()
        if not path.is_dir():
            raise InputError("tool environment folder not found", path=path,
                             fix="pass --tool-root DIR pointing at toolenv/tools, or leave it out")
        return _ENVIRONMENTS.setdefault(str(chosen), cls(path))

    def tool_json(self, category: str, tool: str) -> dict | None:
        """The tool's document, None when there is none; one that cannot be read (a FIFO or device, too big, not
        UTF-8 or JSON, a link loop: tool_coverage.read_tool_document) is exit 2 naming it, never a hang."""
        path = self.root / category / f"{tool}.json"
        data, problem = read_tool_document(path)
        if problem is not None:
            raise InputError(problem.removeprefix(f"{path}: "), path=path,
                             fix="restore the tool file from the tool environment release, or remove it")
        return data

    def tool_description(self, category: str, tool: str) -> str | None:
        key = (category, tool)
        if key not in self._descriptions:
            data = self.tool_json(category, tool)
            desc = data.get("tool_description") if data else None
            if isinstance(desc, str):
                desc = desc[:TOOL_DESCRIPTION_MAX_LENGTH].replace("\n", "").strip() or None
            else:
                desc = None
            self._descriptions[key] = desc
        return self._descriptions[key]
