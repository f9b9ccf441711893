"""Answer files (released or ours) -> a response cache in the upstream layout, so a recorded run replays
against the server exactly.

Every recorded call (CoT ``trys`` chains, DFS ``tree``s, ``compare_candidates``, and ``train_messages`` in
both the old function_call/function and the new tool_calls/tool shapes) becomes one entry:
``{category}/{tool}_for_{category}/{api}.json``, key ``str(json.loads(arguments))``, value
``json.loads(observation)``. Only entries that replay byte for byte are kept: an observation is cached
when it is JSON and ``json.dumps(value)`` gives it back unchanged. Truncated observations (cut at 1024
characters + "...") are not JSON: they are skipped and counted, so a replay covers exact entries only.
Status-1 calls, Finish, and answers the client made up itself (timeouts, status 12) are not cached.
When two recordings of the same call disagree, the first one read wins and the conflict is counted.
A file that cannot be used is refused whole, with its reason, before any of its entries is added: among
others a function or tool name that would leave the cache's folders (``..``, ``/``): names never become paths.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.files.fileio import OutputPathError, output_path_error
from toolbench_adapter.files.input_files import json_depth
from toolbench_adapter.queryset.queries import GROUPS
from toolbench_adapter.queryset.toolset import Toolset, build_toolset

from ..answers.read import RecordedAnswer, UnusableAnswer, expand_answer_inputs, read_recorded
from ..answers.recorded_query import QueryResolver
from ..errors import InputError
from ..naming import suffix_match
from ..protocol import env as E
from ..protocol.functions import FINISH_NAME
from .cache import write_cache_file
from .names import UnsafeName, api_key_for

log = logging.getLogger(__name__)
FINISH = FINISH_NAME
_QUERY_ID = re.compile(r"^(\d+)_")
_CLIENT_ERRORS = (E.TIMEOUT_ERROR, E.REQUEST_INVALID_ERROR)
_CLIENT_MADE_STATUSES = (E.STATUS_NO_SUCH_FUNCTION, E.STATUS_TIMEOUT, E.STATUS_REQUEST_INVALID)


@dataclass(frozen=True)
class RecordedCall:
    name: str
    arguments: str
    observation: str | None
    status: int | None  # observation_code when the recording has it (tree/chain nodes)


@dataclass
class BuildReport:
    answer_files: int = 0
    calls: int = 0
    entries: int = 0  # distinct (api, key) pairs now in the output
    api_files: int = 0
    skipped: Counter = field(default_factory=Counter)  # reason -> calls
    skipped_files: Counter = field(default_factory=Counter)  # reason -> answer files
    conflicts: int = 0
    reconstructed: int = 0  # entries rebuilt from observations stored cut at 1024 characters
    refused: list[dict] = field(default_factory=list)  # {"path", "reason", "message"} per file not used

    def as_dict(self) -> dict:
        return {"answer_files": self.answer_files, "calls": self.calls, "entries": self.entries,
                "api_files": self.api_files, "conflicts": self.conflicts,
                "reconstructed_truncated": self.reconstructed, "skipped_calls": dict(self.skipped),
                "skipped_files": dict(self.skipped_files), "refused_files": self.refused}


def answer_files(paths: list[str | Path]) -> Iterator[Path]:
    yield from expand_answer_inputs(paths)


def identify(path: Path) -> tuple[str, int] | None:
    """(group, query id) from ``.../{group}/{query_id}_{method}.json``."""
    match = _QUERY_ID.match(path.name)
    group = next((p.name for p in path.parents if p.name in GROUPS), None)
    if not match or group is None:
        return None
    return group, int(match.group(1))


def recorded_calls(answer: dict) -> Iterator[RecordedCall]:
    for attempt in answer.get("trys") or []:
        yield from _chain_calls(attempt.get("chain") or [])
    for chain in answer.get("compare_candidates") or []:
        if isinstance(chain, list):
            yield from _chain_calls(chain)
    tree = (answer.get("tree") or {}).get("tree")
    if isinstance(tree, dict):
        yield from _tree_calls(tree, None)
    for messages in (answer.get("answer_generation") or {}).get("train_messages") or []:
        if isinstance(messages, list):
            yield from _message_calls(messages)


def _node_call(node: dict, action: str | None) -> RecordedCall | None:
    if node.get("node_type") != "Action Input" or action is None:
        return None
    return RecordedCall(action, node.get("description") or "", node.get("observation"), node.get("observation_code"))


def _chain_calls(chain: list) -> Iterator[RecordedCall]:
    action = None
    for node in chain:
        if not isinstance(node, dict):
            continue
        if node.get("node_type") == "Action":
            action = node.get("description")
        call = _node_call(node, action)
        if call is not None:
            yield call


def _tree_calls(node: dict, action: str | None) -> Iterator[RecordedCall]:
    if node.get("node_type") == "Action":
        action = node.get("description")
    call = _node_call(node, action)
    if call is not None:
        yield call
    for child in node.get("children") or []:
        if isinstance(child, dict):
            yield from _tree_calls(child, action)


def _message_calls(messages: list) -> Iterator[RecordedCall]:
    pending: dict[str | None, tuple[str, str]] = {}
    last_legacy: tuple[str, str] | None = None
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            if message.get("function_call"):
                call = message["function_call"]
                last_legacy = (call.get("name") or "", call.get("arguments") or "")
            for tool_call in message.get("tool_calls") or []:
                function = tool_call.get("function") or {}
                pending[tool_call.get("id")] = (function.get("name") or "", function.get("arguments") or "")
        elif role == "function" and last_legacy is not None:
            yield RecordedCall(last_legacy[0], last_legacy[1], message.get("content"), None)
            last_legacy = None
        elif role == "tool":
            call = pending.pop(message.get("tool_call_id"), None)
            if call is not None:
                yield RecordedCall(call[0], call[1], message.get("content"), None)


def _skip_reason(call: RecordedCall) -> str | None:
    if call.name == FINISH:
        return "finish"
    if call.name == E.INVALID_FUNCTION_NAME or call.status == E.STATUS_NO_SUCH_FUNCTION:
        return "no_such_function"
    if call.status in _CLIENT_MADE_STATUSES:
        return "client_made_answer"
    if not call.observation:
        return "no_observation"
    return None


def reconstruct_truncated(observation: str, limit: int = E.MAX_OBSERVATION_LENGTH) -> Any:
    """An answer whose observation, cut at ``limit`` as the client cuts it, is exactly ``observation``.

    A recorded observation longer than the limit was stored cut (first ``limit`` characters + "...") and
    is not JSON. Closing its open string and brackets (with a placeholder value when the cut fell inside
    a key) gives an answer whose JSON text starts with the same ``limit`` characters, so replaying it at
    that limit shows the model the same bytes. The tail is invented, so such entries are exact only at
    that limit: the build report counts them (``reconstructed_truncated``). None when no candidate fits."""
    prefix = observation[: -len(E.TRUNCATION_SUFFIX)]
    if len(prefix) != limit or not observation.endswith(E.TRUNCATION_SUFFIX):
        return None
    in_string, escaped, stack = False, False, []
    for char in prefix:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
        elif char in "}]" and stack:
            stack.pop()
    if escaped:
        return None  # cut inside an escape sequence: no closing reproduces it
    closers = "".join(reversed(stack))
    heads = ['"'] if in_string else [""]
    for head in heads:
        for tail in ("", ': ""', " null", ' ""', ": null", '"": null'):
            try:
                value = json.loads(prefix + head + tail + closers)
            except ValueError:
                continue
            text = json.dumps(value)
            if isinstance(value, dict) and len(text) > limit and text[:limit] == prefix:
                return value
    return None


def _decode_observation(observation: str) -> tuple[Any, str | None]:
    try:
        value = json.loads(observation)
    except ValueError:
        if observation.endswith(E.TRUNCATION_SUFFIX) and len(observation) > E.MAX_OBSERVATION_LENGTH:
            value = reconstruct_truncated(observation)
            return (value, "reconstructed_truncated") if value is not None else (None, "truncated_observation")
        return None, "observation_not_json"
    if not isinstance(value, dict):
        return None, "observation_not_object"
    error = value.get("error")
    if isinstance(error, str) and (error in _CLIENT_ERRORS or error.startswith(E.REQUEST_INVALID_ERROR)
                                   or error.startswith(E.NO_SUCH_FUNCTION_ERROR.split("{")[0])):
        return None, "client_made_answer"
    if json.dumps(value) != observation:
        return None, "observation_not_canonical"
    return value, None


def _decode_arguments(arguments: str) -> tuple[Any, str | None]:
    if arguments == "":
        return {}, None  # the server reads an empty tool input as {}
    try:
        return json.loads(arguments), None
    except ValueError:
        return None, "arguments_not_json"  # the server answered "Tool input parse error": nothing to key


def not_replayable(answer: dict) -> dict[tuple[str, str], str]:
    """(name, arguments) -> why the recorded answer of that call cannot be served byte for byte from a cache
    (calls the client answers itself, Finish and status 1, are not listed: they need no cache)."""
    reasons: dict[tuple[str, str], str] = {}
    for call in recorded_calls(answer):
        if _skip_reason(call) in ("finish", "no_such_function"):
            continue
        reason = _skip_reason(call)
        if reason is None:
            reason = _decode_observation(call.observation)[1]
            reason = None if reason == "reconstructed_truncated" else reason
        reason = reason or _decode_arguments(call.arguments)[1]
        if reason is not None:
            reasons.setdefault((call.name, call.arguments), reason)
    return reasons


def usable_calls(answer: RecordedAnswer, toolset: Toolset) -> list[RecordedCall]:
    """The file's recorded calls, or UnusableAnswer when a route would leave the cache's folders (a function
    or tool name holding ``..`` or ``/``: names never become paths) or the file cannot be walked. Checked
    for the whole file before any of its entries is added, so a refused file adds nothing."""
    names = answer.function_names
    for name, route in toolset.routes.items():
        try:
            api_key_for(route.category, route.tool_name, route.api_name)
        except UnsafeName as exc:
            where = f"answer_generation.function[{names.index(name)}]" if name in names else "answer_generation.function"
            raise UnusableAnswer("unsafe_function_name", f"function {name!r} would be cached outside the cache "
                                 f"folder ({exc})", path=answer.path, field=where,
                                 fix="leave this file out: function and tool names never hold '..' or '/'") from None
    try:
        calls = list(recorded_calls(answer.data))
    except RecursionError:
        raise UnusableAnswer("too_deeply_nested", "nested too deeply to walk (RecursionError)", path=answer.path,
                             field="tree / trys", fix="leave this file out") from None
    except (TypeError, AttributeError, ValueError) as exc:  # a shape shape.py does not name
        raise UnusableAnswer("malformed", f"unexpected content ({type(exc).__name__}: {exc})",
                             path=answer.path, fix="leave this file out") from None
    for call in calls:
        _refuse_deep(call, answer.path)
    return calls


def _refuse_deep(call: RecordedCall, path: str | None) -> None:
    """UnusableAnswer when a call's arguments or observation (JSON in a string) nest too deeply to decode, key
    and write back: found before the file adds anything, so the file is refused whole and the others built."""
    for part, text in (("arguments", call.arguments), ("observation", call.observation)):
        if not isinstance(text, str) or not text.lstrip().startswith(("[", "{")):
            continue
        try:
            value = json.loads(text)
            json.dumps({"key": {"key": value}}), str(value)  # what keying and writing the cache file do
        except ValueError:
            continue  # not JSON: a reason of its own, per call
        except RecursionError:
            depth = json_depth(text)[0]
            raise UnusableAnswer("too_deeply_nested", f"the {part} of a call to {call.name!r} nest {depth} levels "
                                 "deep (too deep to decode)", path=path, field=f"tool call {call.name} {part}",
                                 fix="leave this file out") from None


class CacheBuilder:
    """``isolate``: every file's calls route under its own category (what ``tba replay`` does), so two
    recordings of the same call never conflict. Otherwise queries from a query set keep their categories
    and only queries read from answer files get one of their own (``answer_{digest}``)."""

    def __init__(self, stb_root: str | Path | None, queries_file: str | Path | None = None, isolate: bool = False):
        self.resolver = QueryResolver(stb_root, queries_file, isolate=isolate)
        self.report = BuildReport()
        self.entries: dict[str, dict[str, Any]] = {}  # relative path -> key -> answer

    def add_paths(self, paths: list[str | Path]) -> None:
        for path in answer_files(paths):
            self.add_file(path)

    def _refuse(self, path: Path, reason: str, message: str, field: str | None = None) -> None:
        self.report.skipped_files[reason] += 1
        self.report.refused.append({"path": str(path), "reason": reason, "field": field, "message": message})

    def add_file(self, path: Path) -> bool:
        """Add one file's calls; False (and the reason recorded) when the file cannot be used."""
        try:
            answer = read_recorded(path)
            resolved = self.resolver.resolve(answer)
            toolset = build_toolset(resolved.query, answer.flavour)
            calls = usable_calls(answer, toolset)
        except UnusableAnswer as exc:
            self._refuse(path, exc.reason, exc.problem, exc.field)
            return False
        except InputError as exc:
            self._refuse(path, "query_not_found", exc.problem, exc.field)
            return False
        self.add_answer(answer.data, toolset, calls)
        return True

    def add_answer(self, answer: dict, toolset, calls: list[RecordedCall] | None = None) -> None:
        """``calls``: the file's recorded calls as ``usable_calls`` gave them (read here when None)."""
        self.report.answer_files += 1
        # route as the run did: against the function list the model saw (answer_generation.function)
        recorded = [f.get("function", f).get("name") for f in answer["answer_generation"].get("function") or []
                    if isinstance(f, dict)]
        names = [n for n in recorded if isinstance(n, str) and n != FINISH] or \
            [n for n in toolset.names if n != FINISH]
        for call in recorded_calls(answer) if calls is None else calls:
            self.report.calls += 1
            reason = self._add_call(call, names, toolset.routes)
            if reason is not None:
                self.report.skipped[reason] += 1

    def _add_call(self, call: RecordedCall, names: list[str], routes: dict) -> str | None:
        reason = _skip_reason(call)
        if reason is not None:
            return reason
        function = suffix_match(call.name, names)
        if function is None or function not in routes:
            return "unknown_function"
        value, reason = _decode_observation(call.observation)
        reconstructed = reason == "reconstructed_truncated"
        if reason is not None and not reconstructed:
            return reason
        arguments, reason = _decode_arguments(call.arguments)
        if reason is not None:
            return reason
        route = routes[function]
        rel = api_key_for(route.category, route.tool_name, route.api_name).relative_path()
        key = str(arguments)
        entries = self.entries.setdefault(rel, {})
        if key in entries:
            if entries[key] != value:
                self.report.conflicts += 1
                return "conflict"
            return "duplicate"
        entries[key] = value
        if reconstructed:
            self.report.reconstructed += 1
        return None

    def write(self, out: str | Path) -> BuildReport:
        """Merge into ``out`` (existing entries win) with atomic per-file writes."""
        root = Path(out)
        for rel in self.entries:  # before the first write: a folder at a file's name would stop us half-way
            if (root / rel).is_dir():
                raise OutputPathError("a folder has the name this cache file needs", path=root / rel,
                                      fix="remove that folder or choose another --out folder")
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise output_path_error(root, exc) from None
        total = 0
        for rel, entries in sorted(self.entries.items()):
            path = root / rel
            merged: dict[str, Any] = {}
            if path.exists():
                try:
                    merged = json.loads(path.read_text(encoding="utf-8"))
                except (ValueError, RecursionError):
                    raise InputError("existing cache file is not valid JSON", path=path,
                                     fix="remove it or choose another --out folder") from None
                if not isinstance(merged, dict):
                    raise InputError("existing cache file is not a JSON object (arguments -> answer)", path=path,
                                     fix="remove it or choose another --out folder")
            for key, value in entries.items():
                if key in merged and merged[key] != value:
                    self.report.conflicts += 1
                merged.setdefault(key, value)
            write_cache_file(path, merged, root)
            total += len(merged)
        self.report.entries = total
        self.report.api_files = len(self.entries)
        return self.report


def build_cache(answers: list[str | Path], stb_root: str | Path | None, out: str | Path,
                queries_file: str | Path | None = None) -> BuildReport:
    """Raises InputError, writing nothing, when no file could be used (each file's reason in the message)."""
    builder = CacheBuilder(stb_root, queries_file)
    builder.add_paths(answers)
    if builder.report.answer_files == 0:
        raise InputError(no_usable_files_message(builder.report), path=", ".join(map(str, answers)),
                         fix="pass answer files (CoT trys or a DFS tree with answer_generation); a file without "
                         "its query text needs --stb-root or --queries holding that query")
    return builder.write(out)


def no_usable_files_message(report: BuildReport, limit: int = 20) -> str:
    if not report.refused:
        return "no answer files (*.json) in the inputs"
    lines = [f"no answer file could be used ({len(report.refused)} refused"
             + (": " + ", ".join(f"{k} {v}" for k, v in sorted(report.skipped_files.items())) if report.refused else "")
             + ")"]
    for item in report.refused[:limit]:
        lines.append("  " + refusal_line(item))
    if len(report.refused) > limit:
        lines.append(f"  ... and {len(report.refused) - limit} more")
    return "\n".join(lines)


def refusal_line(item: dict) -> str:
    """``PATH: REASON: field F: what is wrong`` for one refused answer file."""
    field = f"field {item['field']}: " if item.get("field") else ""
    return f"{item['path']}: {item['reason']}: {field}{item['message']}"
