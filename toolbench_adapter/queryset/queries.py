"""StableToolBench query files: groups, test ids, api lists; the sample set in data/.

Layout (upstream): ``{root}/solvable_queries/test_instruction/{GROUP}.json`` (a JSON list of queries) and
``{root}/solvable_queries/test_query_ids/{GROUP}.json`` (``{"<id>": 0, ...}``); only listed ids are evaluated.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.input_files import read_json

# toolbench/tooleval/utils.py (test_sets): canonical group order
GROUPS = ("G1_instruction", "G1_category", "G1_tool", "G2_instruction", "G2_category", "G3_instruction")
# README column labels (the SoPR table order differs from GROUPS: I2 Cat comes before I2 Inst)
GROUP_LABELS = {
    "G1_instruction": "I1 Inst",
    "G1_category": "I1 Cat",
    "G1_tool": "I1 Tool",
    "G2_category": "I2 Cat",
    "G2_instruction": "I2 Inst",
    "G3_instruction": "I3 Inst",
}

QUERY_DIR = Path("solvable_queries") / "test_instruction"
IDS_DIR = Path("solvable_queries") / "test_query_ids"
PROJECT_DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLE_ROOT = PROJECT_DATA / "sample"
# the fix of every "no checkout" error: the 765 queries ship in data/ (protocol/query_files.py), and fetch again
ROOT_HINT = ("pass --stb-root data/stabletoolbench (StableToolBench's 765 solvable queries, shipped), or --stb-root DIR "
             "(or TBA_STB_ROOT) for another checkout holding solvable_queries/; `tba data fetch --out DIR` downloads "
             "the query files again")


def is_group_name(name: str) -> bool:
    """Group folders of a run or checkout are named G<level>_<kind> (G1_instruction, G3_instruction, ...);
    anything else in a run folder (eval/, steps/, converted/, tables/) is not answers."""
    return re.match(r"^G\d+_\w+$", name) is not None


@dataclass
class Query:
    query_id: int
    group: str
    query: str
    api_list: list[dict]
    relevant_apis: list = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)
    # a function list recorded in an answer file, sent verbatim (routes: api_list entries naming function_name)
    functions: list[dict] | None = field(default=None, repr=False)


def resolve_root(root: str | Path | None) -> Path:
    """--stb-root, else $TBA_STB_ROOT, else the project's sample set. The folder must hold
    solvable_queries/test_instruction (a checkout) or test_instruction/ itself (e.g. solvable_queries_example)."""
    chosen = root or os.environ.get("TBA_STB_ROOT") or SAMPLE_ROOT
    path = Path(chosen).expanduser()
    if not path.is_dir():
        raise InputError("StableToolBench checkout not found", path=path, fix=ROOT_HINT)
    if not (path / QUERY_DIR).is_dir() and not (path / QUERY_DIR.name).is_dir():
        raise InputError(f"no {QUERY_DIR} folder inside the checkout", path=path, fix=ROOT_HINT)
    return path


class QuerySet:
    """All groups of one checkout, loaded lazily, each filtered by its test ids."""

    def __init__(self, root: str | Path | None = None):
        self.root = resolve_root(root)
        nested = (self.root / QUERY_DIR).is_dir()
        self.query_dir = self.root / QUERY_DIR if nested else self.root / QUERY_DIR.name
        self.ids_dir = self.root / IDS_DIR if nested else self.root / IDS_DIR.name
        self._cache: dict[str, list[Query]] = {}

    def available_groups(self) -> list[str]:
        present = {p.stem for p in self.query_dir.glob("*.json")}
        ordered = [g for g in GROUPS if g in present]
        return ordered + sorted(present - set(ordered))

    def check_group(self, group: str) -> None:
        groups = self.available_groups()
        if group not in groups:
            raise InputError(f"unknown group {group!r}; this checkout has: {', '.join(groups) or 'none'}",
                             path=self.query_dir, fix=f"choose one of {', '.join(groups)}")

    def test_ids(self, group: str) -> list[int] | None:
        """Ids listed for evaluation, in file order; None when the id file is absent (all queries count)."""
        path = self.ids_dir / f"{group}.json"
        if not os.path.lexists(path):  # a link loop or a dangling link is there, and refused by the reader
            return None
        data = read_json(path, "test id file")
        if not isinstance(data, dict):
            raise InputError("test id file must be a JSON object {\"<query_id>\": 0, ...}", path=path)
        try:
            return [int(k) for k in data]
        except ValueError:
            raise InputError("test id keys must be integers written as strings", path=path) from None

    def load(self, group: str) -> list[Query]:
        """The evaluated queries of a group, in the order of the instruction file."""
        if group in self._cache:
            return self._cache[group]
        self.check_group(group)
        path = self.query_dir / f"{group}.json"
        data = read_json(path, "query file")
        if not isinstance(data, list):
            raise InputError("query file must be a JSON list of query objects", path=path)
        wanted = self.test_ids(group)
        wanted_set = set(wanted) if wanted is not None else None
        queries = []
        for index, item in enumerate(data):
            query = _to_query(item, group, path, index)
            if wanted_set is None or query.query_id in wanted_set:
                queries.append(query)
        self._cache[group] = queries
        return queries

    def get(self, group: str, query_id: int | str) -> Query:
        try:
            qid = int(query_id)
        except (TypeError, ValueError):
            raise InputError(f"query id must be an integer, got {query_id!r}") from None
        for query in self.load(group):
            if query.query_id == qid:
                return query
        ids = [q.query_id for q in self.load(group)]
        sample = ", ".join(str(i) for i in ids[:8]) + (" ..." if len(ids) > 8 else "")
        raise InputError(f"query id {qid} is not an evaluated query of {group} ({len(ids)} ids: {sample})",
                         path=self.query_dir / f"{group}.json", fix="run `tba queries --group "
                         f"{group}` to list the ids")

    def iter(self, groups: Iterable[str] | None = None) -> Iterable[Query]:
        for group in groups or self.available_groups():
            yield from self.load(group)

    def counts(self) -> dict[str, int]:
        return {group: len(self.load(group)) for group in self.available_groups()}


REQUIRED_QUERY_FIELDS = ("query", "query_id", "api_list")
REQUIRED_API_FIELDS = ("category_name", "tool_name", "api_name")
RECORDED_FUNCTIONS = "recorded_functions"  # query-file key of a verbatim function list (queries from answer files)


def _to_query(item: Any, group: str, path: Path, index: int) -> Query:
    where = f"[{index}]"
    if not isinstance(item, dict):
        raise InputError("each query must be a JSON object", path=path, field=where)
    for name in REQUIRED_QUERY_FIELDS:
        if name not in item:
            raise InputError(f"query is missing {name!r}", path=path, field=where,
                             fix=f"every query needs {', '.join(REQUIRED_QUERY_FIELDS)}")
    recorded = item.get(RECORDED_FUNCTIONS)
    if recorded is not None and not isinstance(recorded, list):
        raise InputError(f"{RECORDED_FUNCTIONS} must be a list of functions", path=path,
                         field=f"{where}.{RECORDED_FUNCTIONS}")
    # a recorded function list may hold Finish alone (a query whose tools were all removed)
    if not isinstance(item["api_list"], list) or (not item["api_list"] and recorded is None):
        raise InputError("api_list must be a non-empty list", path=path, field=f"{where}.api_list")
    for api_index, api in enumerate(item["api_list"]):
        missing = [n for n in REQUIRED_API_FIELDS if not isinstance(api, dict) or n not in api]
        if missing:
            raise InputError(f"api entry is missing {', '.join(missing)}", path=path,
                             field=f"{where}.api_list[{api_index}]")
    try:
        query_id = int(item["query_id"])
    except (TypeError, ValueError):
        raise InputError("query_id must be an integer", path=path, field=f"{where}.query_id") from None
    return Query(query_id=query_id, group=group, query=str(item["query"]), api_list=item["api_list"],
                 relevant_apis=item.get("relevant APIs", []), raw=item, functions=recorded)


def load_query_file(path: str | Path, group: str = "") -> list[Query]:
    """A ToolBench-style query file (a JSON list of ``{query, query_id, api_list}``, e.g. ToolBench's
    ``G1_query.json``), every query kept (no test-id filter)."""
    path = Path(path)
    data = read_json(path, "query file")
    if not isinstance(data, list):
        raise InputError("query file must be a JSON list of query objects", path=path,
                         fix="pass a file like ToolBench's data/instruction/G1_query.json")
    return [_to_query(item, group, path, index) for index, item in enumerate(data)]
