"""Which query an answer file answers, and the function routes its calls take, for replay and caching.

The query comes from a ToolBench-style query file (``--queries``) when it holds the file's query id with the
same text, else from StableToolBench's set when it holds it with the same text and the same function names
(the recorded turns call the functions the model saw), else from the answer file itself
(``answer_generation.query`` and ``.function``, the function list sent verbatim); the notes say why a
query set was passed over. ToolBench answer files carry no category, and routes
need one: a query read from an answer file routes under ``answer_{digest}``, a digest of the file's bytes,
so the cache built from that file and the replay of that file key it the same way (and two recordings
never share, or fight over, entries). ``isolate=True`` (replay) gives every file its own category that
way, whatever its query source.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.queryset.queries import GROUPS, RECORDED_FUNCTIONS, Query, QuerySet, load_query_file
from toolbench_adapter.queryset.toolset import build_toolset

from ..errors import InputError
from ..protocol.functions import FINISH_NAME
from .read import RecordedAnswer, UnusableAnswer

ANSWER_CATEGORY_PREFIX = "answer_"
_TOOL_IN_DESCRIPTION = re.compile(r'^This is the subfunction for tool "([^"]+)"')
FROM_STB, FROM_QUERY_FILE, FROM_ANSWER = "stabletoolbench", "query_file", "answer_file"


def recording_category(path: str | Path) -> str:
    """The category a recording's calls route under when it has none: stable for the same bytes."""
    return ANSWER_CATEGORY_PREFIX + hashlib.sha1(Path(path).read_bytes()).hexdigest()[:12]


def routes_for_functions(functions: list[dict], category: str) -> list[dict]:
    """api_list entries (with ``function_name``) for a recorded function list: the tool from the description
    upstream writes ("This is the subfunction for tool ..."), else from the name's last ``_for_``."""
    apis = []
    for function in functions:
        inner = function.get("function", function)
        name = inner.get("name")
        if not isinstance(name, str) or name == FINISH_NAME or not name:
            continue
        found = _TOOL_IN_DESCRIPTION.match(str(inner.get("description") or ""))
        tool = found.group(1) if found else (name.rsplit("_for_", 1)[1] if "_for_" in name else name)
        suffix = "_for_" + tool
        api = name[: -len(suffix)] if name.endswith(suffix) and len(name) > len(suffix) else name
        apis.append({"category_name": category, "tool_name": tool, "api_name": api, "function_name": name})
    return apis


@dataclass
class ResolvedQuery:
    query: Query  # group: the group the answer belongs to (from its path or its query set), may be None
    source: str  # FROM_STB, FROM_QUERY_FILE or FROM_ANSWER
    notes: list[str] = field(default_factory=list)  # why a query set was not used (kinds for replay.jsonl)


class QueryResolver:
    def __init__(self, stb_root: str | Path | None = None, queries_file: str | Path | None = None,
                 isolate: bool = False):
        self.stb: QuerySet | None
        try:
            self.stb = QuerySet(stb_root)
        except InputError:
            if stb_root is not None:
                raise
            self.stb = None  # a cold start: no checkout, no sample set; answer files carry their queries
        self.extra = {q.query_id: q for q in load_query_file(queries_file)} if queries_file else {}
        self.isolate = isolate
        self._by_text: dict[str, list[Query]] | None = None

    def _stb_queries(self, group: str | None) -> list[Query]:
        if self.stb is None:
            return []
        groups = self.stb.available_groups()
        chosen = [group] if group in groups else ([] if group in GROUPS else groups)
        return [q for g in chosen for q in self.stb.load(g)]

    def _stb_match(self, answer: RecordedAnswer, query_id: int | None) -> tuple[Query | None, str | None]:
        """StableToolBench's query for this answer (same id and text; any id when the file has none)."""
        group = answer.identity.group
        candidates = self._stb_queries(group)
        text = answer.query
        same_id = [q for q in candidates if q.query_id == query_id] if query_id is not None else []
        if text is None:
            return (same_id[0], None) if len(same_id) == 1 else (None, None)
        exact = [q for q in same_id if q.query == text]
        if exact:
            return exact[0], None
        if query_id is None:
            by_text = [q for q in candidates if q.query == text]
            return (by_text[0], None) if by_text else (None, None)
        return None, "query_differs_from_stabletoolbench" if same_id else None

    def resolve(self, answer: RecordedAnswer) -> ResolvedQuery:
        query_id = answer.query_id
        notes: list[str] = []
        resolved = None
        extra = self.extra.get(query_id) if query_id is not None else None
        if extra is None and query_id is None and answer.query:
            extra = next((q for q in self.extra.values() if q.query == answer.query), None)
        if extra is not None and (answer.query is None or extra.query == answer.query):
            resolved = ResolvedQuery(_with_group(extra, answer.identity.group), FROM_QUERY_FILE, notes)
        elif extra is not None:
            notes.append("query_differs_from_query_file")
        if resolved is None:
            stb, note = self._stb_match(answer, query_id)
            if note:
                notes.append(note)
            if stb is not None and answer.functions and \
                    build_toolset(stb, answer.flavour).names != answer.function_names:
                # the recorded turns call the functions the model saw: replay against those
                notes.append("function_list_differs_from_stabletoolbench")
            elif stb is not None:
                group = answer.identity.group if answer.identity.group in GROUPS else stb.group
                resolved = ResolvedQuery(_with_group(stb, group), FROM_STB, notes)
        if resolved is None:
            resolved = ResolvedQuery(self._from_answer(answer, query_id), FROM_ANSWER, notes)
        if self.isolate and resolved.source != FROM_ANSWER:
            resolved.query = _isolated(resolved.query, answer)
        return resolved

    def _from_answer(self, answer: RecordedAnswer, query_id: int | None) -> Query:
        where = f"{self.stb.root}" if self.stb is not None else "no StableToolBench checkout"
        if answer.query is None:
            raise UnusableAnswer("query_not_found", f"the file holds no query text and query id {query_id} of "
                                 f"{answer.identity.group} is not in {where}", path=answer.path,
                                 field="answer_generation.query",
                                 fix="pass --stb-root (or --queries FILE) holding that query")
        if query_id is None:
            raise UnusableAnswer("no_query_id", "no query id in the file name or the file, and no query set "
                                 "holds its query text", path=answer.path, field="file name",
                                 fix="name the file {query_id}_{method}.json, or pass --queries FILE with the query")
        if not answer.functions:
            raise UnusableAnswer("no_function_list", "the file holds no function list and its query is in no "
                                 "query set", path=answer.path, field="answer_generation.function",
                                 fix="pass --queries FILE (or --stb-root) holding that query")
        category = recording_category(answer.path)
        item = {"query": answer.query, "query_id": query_id,
                "api_list": routes_for_functions(answer.functions, category),
                RECORDED_FUNCTIONS: answer.functions}
        return Query(query_id=query_id, group=answer.identity.group or "", query=answer.query,
                     api_list=item["api_list"], raw=item, functions=answer.functions)


def _with_group(query: Query, group: str | None) -> Query:
    return Query(query_id=query.query_id, group=group or query.group, query=query.query, api_list=query.api_list,
                 relevant_apis=query.relevant_apis, raw=query.raw, functions=query.functions)


def _isolated(query: Query, answer: RecordedAnswer) -> Query:
    """The same functions as the query set gives, routed under this recording's own category."""
    toolset = build_toolset(query, answer.flavour)
    category = recording_category(answer.path)
    apis = [{"category_name": category, "tool_name": route.tool_name, "api_name": route.api_name,
             "function_name": name} for name, route in toolset.routes.items()]
    item = {"query": query.query, "query_id": query.query_id, "api_list": apis, RECORDED_FUNCTIONS: toolset.functions}
    return Query(query_id=query.query_id, group=query.group, query=query.query, api_list=apis,
                 relevant_apis=query.relevant_apis, raw=item, functions=toolset.functions)
