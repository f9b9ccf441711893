"""``schema``: offline and deterministic. The answer is shaped by the API's template_response (from the
query files) and filled with values derived from a hash of (api, request, position), so the same call
always gets the same answer and different calls get different ones."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import date, timedelta
from typing import Any

from ...naming import pure_api_name
from .base import SimulationRequest, SimulationResult, SimulatorOptions

MAX_LIST_LENGTH = 10  # template lists can be long; a simulated answer stays readable
DEFAULT_LIST_LENGTH = 3
_LIST_OF = re.compile(r"^list of (\w+) with length (\d+)$")
_LIST_LENGTH_KEY = "_list_length"


class SchemaSimulator:
    name = "schema"

    def __init__(self, options: SimulatorOptions | None = None):
        pass

    def simulate(self, request: SimulationRequest) -> SimulationResult:
        seed = f"{request.key.relative_path()}\n{request.cache_key}"
        doc = request.doc
        missing = _missing_required(doc.required_parameters if doc else [], request.tool_input)
        if missing:
            message = f"Missing required parameter{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
            return SimulationResult({"error": "", "response": {"message": message}})
        template = _load_template(doc.template_response if doc else None)
        if template is None:
            body = _generic_answer(seed, request)
        else:
            body = _Filler(seed).fill(template, name=request.key.api, path="$")
        return SimulationResult({"error": "", "response": body})


GENERIC_KEYS = frozenset({"status", "api", "query", "results"})


def could_have_made(response: Any, doc: Any) -> bool:
    """A cheap test of a stored answer's ``response`` against the shapes this simulator gives (the generic answer,
    a missing-parameter message, the template's top level): False means it did not make it, True that it may
    have (server/provenance.py then simulates the request and compares)."""
    if isinstance(response, dict):
        keys = set(response)
        if keys == GENERIC_KEYS and response.get("status") == "success":
            return True
        if keys == {"message"} and str(response["message"]).startswith("Missing required parameter"):
            return True
    template = _load_template(doc.template_response) if doc is not None else None
    if isinstance(template, dict):
        return isinstance(response, dict) and set(response) == set(template) - {_LIST_LENGTH_KEY}
    if isinstance(template, list):
        return isinstance(response, list)
    return template is not None  # a leaf template ("str", "int", ...): any value may be its filling


def _missing_required(required: list, tool_input: Any) -> list[str]:
    given = tool_input if isinstance(tool_input, dict) else {}
    # the model sees parameter keys as the toolset writes them (change_name(standardize(name)))
    names = [pure_api_name(str(p.get("name", ""))) for p in required if isinstance(p, dict)]
    return [n for n in names if n and n not in given]


def _load_template(template: Any) -> Any:
    if template is None or template == "" or template == {}:
        return None
    if isinstance(template, str):
        try:
            return json.loads(template)
        except ValueError:
            return template
    return template


def _generic_answer(seed: str, request: SimulationRequest) -> dict:
    """No template: a small, plausible result list that echoes the request."""
    filler = _Filler(seed)
    items = [{"id": filler.text("id", f"$.results[{i}].id"), "name": filler.text("name", f"$.results[{i}].name"),
              "score": filler.number("float", f"$.results[{i}].score")} for i in range(DEFAULT_LIST_LENGTH)]
    return {"status": "success", "api": request.key.api, "query": request.tool_input, "results": items}


class _Filler:
    def __init__(self, seed: str):
        self.seed = seed

    def digest(self, path: str) -> str:
        return hashlib.sha256(f"{self.seed}\n{path}".encode()).hexdigest()

    def fill(self, spec: Any, name: str, path: str) -> Any:
        if isinstance(spec, dict):
            return {k: self.fill(v, k, f"{path}.{k}") for k, v in spec.items() if k != _LIST_LENGTH_KEY}
        if isinstance(spec, list):
            return self.fill_list(spec, name, path)
        if isinstance(spec, bool):
            return self.boolean(path)
        if isinstance(spec, int):
            return self.number("int", path)
        if isinstance(spec, float):
            return self.number("float", path)
        if spec is None:
            return None
        return self.leaf(str(spec), name, path)

    def fill_list(self, spec: list, name: str, path: str) -> list:
        if len(spec) == 1 and isinstance(spec[0], dict) and _LIST_LENGTH_KEY in spec[0]:
            length = min(int(spec[0].get(_LIST_LENGTH_KEY) or 0), MAX_LIST_LENGTH)
            return [self.fill(spec[0], name, f"{path}[{i}]") for i in range(length)]
        return [self.fill(item, name, f"{path}[{i}]") for i, item in enumerate(spec[:MAX_LIST_LENGTH])]

    def leaf(self, kind: str, name: str, path: str) -> Any:
        listed = _LIST_OF.match(kind)
        if listed:
            item_kind, length = listed.group(1), min(int(listed.group(2)), MAX_LIST_LENGTH)
            return [self.leaf(item_kind, name, f"{path}[{i}]") for i in range(length)]
        if kind == "empty list":
            return []
        if kind in ("int", "float"):
            return self.number(kind, path)
        if kind == "bool":
            return self.boolean(path)
        if kind == "NoneType":
            return None
        if kind == "list":
            return []
        if kind == "dict":
            return {}
        return self.text(name, path)

    def number(self, kind: str, path: str) -> int | float:
        value = int(self.digest(path)[:8], 16)
        return value % 1000 if kind == "int" else round((value % 100000) / 1000, 3)

    def boolean(self, path: str) -> bool:
        return int(self.digest(path)[0], 16) % 2 == 0

    def text(self, name: str, path: str) -> str:
        """A string that looks like the field it fills: urls, ids, dates, emails, else "<name> 3f2a"."""
        digest = self.digest(path)
        lowered = name.lower()
        if "url" in lowered or "link" in lowered or "href" in lowered:
            return f"https://example.com/{lowered}/{digest[:8]}"
        if "email" in lowered:
            return f"user{digest[:4]}@example.com"
        if "date" in lowered or lowered.endswith("_at") or "time" in lowered:
            return (date(2023, 1, 1) + timedelta(days=int(digest[:4], 16) % 730)).isoformat()
        if lowered == "id" or lowered.endswith("_id") or lowered.endswith("id"):
            return digest[:12]
        return f"{name} {digest[:4]}"
