"""What the server knows about each API: from the query files (api_list with template_response) and,
optionally, the tool environment (tool descriptions, full api docs). Used to validate requests and to
give simulators their documentation."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.files.folder_files import files_under
from toolbench_adapter.files.input_files import UnreadableFile, read_json
from toolbench_adapter.queryset.queries import QuerySet

from ..naming import pure_api_name, server_tool_folder, standardize, standardize_category
from .names import ApiKey

log = logging.getLogger(__name__)


@dataclass
class ApiDoc:
    key: ApiKey
    api_name: str  # the display name (e.g. "PopularSitesForQuery")
    tool_name: str  # the tool's display name
    category_name: str
    api_description: str = ""
    required_parameters: list = field(default_factory=list)
    optional_parameters: list = field(default_factory=list)
    method: str = ""
    template_response: Any = None
    tool_description: str = ""


class ApiCatalog:
    def __init__(self) -> None:
        self.apis: dict[ApiKey, ApiDoc] = {}
        self.categories: set[str] = set()
        self.tools: set[tuple[str, str]] = set()

    def __len__(self) -> int:
        return len(self.apis)

    @property
    def empty(self) -> bool:
        return not self.apis

    def add(self, api: dict) -> ApiDoc:
        category = api["category_name"]
        tool = standardize(api["tool_name"])
        key = ApiKey(standardize_category(category), server_tool_folder(tool, category), pure_api_name(api["api_name"]))
        doc = self.apis.get(key)
        if doc is None:
            doc = ApiDoc(key=key, api_name=api["api_name"], tool_name=api["tool_name"], category_name=category)
            self.apis[key] = doc
            self.categories.add(key.category)
            self.tools.add((key.category, key.tool_folder))
        doc.api_description = doc.api_description or str(api.get("api_description") or "")
        doc.required_parameters = doc.required_parameters or list(api.get("required_parameters") or [])
        doc.optional_parameters = doc.optional_parameters or list(api.get("optional_parameters") or [])
        doc.method = doc.method or str(api.get("method") or "")
        if doc.template_response is None and api.get("template_response") is not None:
            doc.template_response = api["template_response"]
        return doc

    def add_query_files(self, stb_root: str | Path) -> None:
        """Every evaluated query of every group (QuerySet keeps the ids listed in test_query_ids)."""
        queries = QuerySet(stb_root)
        for query in queries.iter():
            for api in query.api_list:
                self.add(api)

    def add_tool_env(self, tools_root: str | Path) -> None:
        """``{tools}/{Category}/{tool}.json`` (ToolBench tool env): tool descriptions and api docs."""
        root = Path(tools_root)
        for path in files_under(root, "*/*.json", recursive=False):
            try:
                data = read_json(path, "tool document")
            except UnreadableFile as exc:
                log.warning("tool file skipped: %s", exc.message())
                continue
            if not isinstance(data, dict):
                continue
            category = path.parent.name
            tool_description = str(data.get("tool_description") or "")
            for api in data.get("api_list") or []:
                if not isinstance(api, dict) or "name" not in api:
                    continue
                doc = self.add({**api, "api_name": api["name"], "category_name": category,
                                "tool_name": path.stem,
                                "api_description": api.get("description", "")})
                doc.tool_description = doc.tool_description or tool_description
            if not data.get("api_list"):
                self.tools.add((standardize_category(category), server_tool_folder(path.stem, category)))

    def get(self, key: ApiKey) -> ApiDoc | None:
        return self.apis.get(key)

    def unknown_part(self, key: ApiKey) -> str | None:
        """Which part of a request is unknown ("category", "tool_name", "api_name"), or None when known."""
        if self.empty or key in self.apis:
            return None
        if key.category not in self.categories:
            return "category"
        if (key.category, key.tool_folder) not in self.tools:
            return "tool_name"
        return "api_name"
