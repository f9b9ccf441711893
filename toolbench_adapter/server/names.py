"""Request names -> cache location, as upstream's prepare_tool_name_and_url does (with the _for_ fix)."""

from __future__ import annotations

from dataclasses import dataclass

from ..naming import pure_api_name, server_tool_folder, standardize_category
from ..protocol.server import NAME_JOIN


class UnsafeName(ValueError):
    """A name that could point outside the server's folders."""


@dataclass(frozen=True)
class ApiKey:
    """Where one API lives in the cache: ``{category}/{tool_folder}/{api}.json``."""

    category: str  # standardized category (folder name)
    tool_folder: str  # ``{tool}_for_{category}``
    api: str  # pure api name

    @property
    def tool(self) -> str:
        """The standard tool name: only a trailing ``_for_{category}`` is removed (upstream split on the first
        ``_for_``, which broke six test tools whose own name contains ``_for_``)."""
        return self.tool_folder.removesuffix(NAME_JOIN + self.category)

    def relative_path(self) -> str:
        return f"{self.category}/{self.tool_folder}/{self.api}.json"


SIMULATED_DIR = "_simulated"  # the cache's mirror tree of simulated answers (cache.py): not a category


def check_safe(value: str, field: str) -> None:
    if not value or "\x00" in value or ".." in value or "/" in value or "\\" in value or value.startswith("~"):
        raise UnsafeName(f"{field} {value!r} is empty or contains '..', '/', '\\\\' or a NUL byte")


def _check_layout(key: ApiKey) -> None:
    """The derived folders must be ordinary ones inside the layout: not the simulated mirror tree, not a
    tool folder without a tool name (``.`` standardises to an empty tool), no hidden or control-character name."""
    for value, field in ((key.category, "category"), (key.tool_folder, "tool_name"), (key.api, "api_name")):
        if value.startswith(".") or any(ord(c) < 32 for c in value):
            raise UnsafeName(f"{field} {value!r} starts with '.' or holds a control character: not a cache folder name")
    if key.category.lower() == SIMULATED_DIR:
        raise UnsafeName(f"category {key.category!r} is reserved for the cache's simulated answers")
    if not key.tool.strip("_"):
        raise UnsafeName(f"tool_name gives an empty tool folder name ({key.tool_folder!r})")


def api_key_for(category: str, tool_name: str, api_name: str) -> ApiKey:
    """category/tool/api as a client sends them -> the cache location (raises UnsafeName)."""
    for value, field in ((category, "category"), (tool_name, "tool_name"), (api_name, "api_name")):
        check_safe(value, field)
    standard_category = standardize_category(category)
    # a client may send the full function name: keep the api part (upstream's 2024-09 split fix)
    api = pure_api_name(api_name).split(NAME_JOIN + tool_name)[0]
    tool_folder = server_tool_folder(tool_name, category)
    key = ApiKey(standard_category, tool_folder, api)
    for value, field in ((key.category, "category"), (key.tool_folder, "tool_name"), (key.api, "api_name")):
        check_safe(value, field)
    _check_layout(key)
    return key

