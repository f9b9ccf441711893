"""Read raw answer files (``{group}/{query_id}_{method}.json``, upstream layout, or any layout found in the
wild: ``identify_answer_path``, ``read_recorded``) and run folders.

A CoT file has ``win, try_count, trys, compare_candidates, forward_args, answer_generation``; a DFS file has
``win, tree, forward_args, compare_candidates, answer_generation``. Messages come in two styles: the old
``function_call`` / role ``function`` one and the new ``tool_calls`` / role ``tool`` one. Malformed files
raise InputError naming the file and the field (UnusableAnswer, with a reason code, for files read from
anywhere): that includes JSON nested deeper than the parser follows (json raises RecursionError for it, not
ValueError) and nodes, messages or calls of a shape the walkers cannot take (shape.py).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolbench_adapter.files.folder_files import files_under, regular_files
from toolbench_adapter.files.input_files import UnreadableFile, json_depth, read_text
from toolbench_adapter.queryset.queries import GROUPS, is_group_name

from ..errors import RUN_FOLDER_FIX, InputError
from .shape import structure_problem

COT, DFS = "cot", "dfs"
STYLE_FUNCTION_CALL, STYLE_TOOL_CALLS = "function_call", "tool_calls"


@dataclass
class AnswerFile:
    path: Path
    query_id: str  # upstream takes the file name up to the first "_"
    method: str  # the rest of the file name, e.g. "CoT@1" or "DFS_woFilter_w2"
    group: str | None
    data: dict[str, Any]

    @property
    def kind(self) -> str:
        return DFS if "tree" in self.data else COT

    @property
    def generation(self) -> dict[str, Any]:
        return self.data["answer_generation"]

    @property
    def valid(self) -> bool:
        return bool(self.generation.get("valid_data"))

    @property
    def final_answer(self) -> str:
        return self.generation.get("final_answer", "")

    @property
    def conversation(self) -> list[dict]:
        """The full trajectory: the last list of train_messages ([] for an invalid answer)."""
        messages = self.generation.get("train_messages") or []
        return messages[-1] if messages else []

    @property
    def message_style(self) -> str | None:
        return message_style(self.conversation)


def message_style(messages: list[dict]) -> str | None:
    """Which call style a message list uses; None when it has no call at all."""
    for message in messages:
        if message.get("function_call") or message.get("role") == "function":
            return STYLE_FUNCTION_CALL
        if message.get("tool_calls") or message.get("role") == "tool":
            return STYLE_TOOL_CALLS
    return None


def split_file_name(name: str) -> tuple[str, str]:
    """``"1073_CoT@1.json"`` -> ``("1073", "CoT@1")``."""
    stem = name[:-len(".json")] if name.endswith(".json") else name
    query_id, _, method = stem.partition("_")
    return query_id, method


def load_answer(path: str | Path, group: str | None = None) -> AnswerFile:
    path = Path(path)
    try:
        text = read_text(path, "answer file")
    except UnreadableFile as exc:
        if exc.reason == "not_found":
            raise InputError("answer file is missing", path=path) from None
        raise unusable(exc, "re-run the query (the file is damaged)") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnusableAnswer("not_json", f"answer file is not valid JSON ({exc.msg} at line {exc.lineno} column "
                             f"{exc.colno})", path=path, fix="re-run the query (the file was probably cut short)") from None
    except RecursionError:
        raise too_deep_to_parse(text, path) from None
    validate_answer(data, path)
    query_id, method = split_file_name(path.name)
    return AnswerFile(path=path, query_id=query_id, method=method,
                      group=group if group is not None else path.parent.name, data=data)


def _need(container: dict, key: str, kind: type | tuple[type, ...], path: Path, field: str) -> Any:
    if key not in container:
        raise InputError(f"missing field {key!r}", path=path, field=field,
                         fix="this is not a raw answer file (see `tba convert --help` for the layout)")
    value = container[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise InputError(f"expected {names}, got {type(value).__name__}", path=path, field=field)
    return value


def validate_answer(data: Any, path: Path) -> None:
    if not isinstance(data, dict):
        raise InputError("an answer file must hold a JSON object", path=path)
    generation = _need(data, "answer_generation", dict, path, "answer_generation")
    valid = _need(generation, "valid_data", bool, path, "answer_generation.valid_data")
    _need(generation, "final_answer", str, path, "answer_generation.final_answer")
    _need(generation, "function", list, path, "answer_generation.function")
    _need(generation, "query", str, path, "answer_generation.query")
    if "tree" in data:
        tree = _need(data, "tree", dict, path, "tree")
        root = _need(tree, "tree", dict, path, "tree.tree")
        _need(root, "children", list, path, "tree.tree.children")
    else:
        _need(data, "trys", list, path, "trys")
    if valid:
        messages = _need(generation, "train_messages", list, path, "answer_generation.train_messages")
        if not messages or not isinstance(messages[-1], list):
            raise InputError("a valid answer needs at least one message list", path=path,
                             field="answer_generation.train_messages")
        for index, message in enumerate(messages[-1]):
            where = f"answer_generation.train_messages[-1][{index}]"
            if not isinstance(message, dict):
                raise InputError("each message must be an object", path=path, field=where)
            _need(message, "role", str, path, where + ".role")
    check_structure(data, path)


def iter_answer_files(folder: str | Path, method: str | None = None, order: str = "name") -> Iterator[Path]:
    """Answer files of one group folder. ``method`` is a substring filter on the file name (as upstream).

    ``order``: "name" (sorted file names), "numeric" (by query id) or "listdir" (the file system's order,
    which is what upstream's converter used, so its output key order differs between machines).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError("answer folder not found", path=folder, fix="pass the folder holding {qid}_{method}.json")
    names = [n for n in os.listdir(folder) if n.endswith(".json") and (method is None or method in n)]
    names = [path.name for path in regular_files([folder / n for n in names], folder)]  # a FIFO would block
    if order == "name":
        names.sort()
    elif order == "numeric":
        names.sort(key=lambda n: (_as_int(split_file_name(n)[0]), n))
    elif order != "listdir":
        raise InputError(f"unknown file order {order!r}", fix="choose name, numeric or listdir")
    return (folder / n for n in names)


def _as_int(text: str) -> float:
    try:
        return int(text)
    except ValueError:
        return float("inf")


def iter_run_folder(run_dir: str | Path, method: str | None = None,
                    groups: list[str] | None = None) -> Iterator[AnswerFile]:
    """Every answer file of a run folder ``{run}/{group}/{qid}_{method}.json``, groups and files sorted."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("run folder not found", path=run_dir, fix=RUN_FOLDER_FIX)
    for group_dir in sorted(p for p in run_dir.iterdir() if p.is_dir() and is_group_name(p.name)):
        if groups is not None and group_dir.name not in groups:
            continue
        for path in iter_answer_files(group_dir, method):
            yield load_answer(path, group=group_dir.name)


# -- answer files in any layout (released runs, forks, renamed copies) ---------------------------------------
# upstream's two methods are found even behind a model name (69_ChatGPT_DFS_woFilter_w2.json); any other method
# (a plug-in's, which this library cannot list) is the name's tail after the query id
METHOD_AT_END = re.compile(r"(CoT@\d+|DFS_woFilter_w\d+)$")
_GROUP_TOKEN = re.compile(r"(?:^|[^A-Za-z0-9])(" + "|".join(GROUPS) + r")(?![A-Za-z0-9])")


@dataclass(frozen=True)
class AnswerIdentity:
    """What a file's path says about it. ``method`` is the run method (CoT@N, DFS_woFilter_wN) even when the
    name carries more (``69_ChatGPT_DFS_woFilter_w2.json``); ``group`` a group named anywhere in the path
    (``A_G2_instruction_toolllama-2/``, ``G1_tool_type3_qaq_v2_chatgpt/``), else a group-like folder name."""

    query_id: int | None
    method: str | None
    group: str | None


def identify_answer_path(path: str | Path) -> AnswerIdentity:
    """``{qid}_{method}.json``, ``{qid}_{model}_{method}.json``, ``..._G2_instruction_toolllama-2_81506_CoT@1.json``:
    the method is the trailing CoT@N / DFS_woFilter_wN, the query id the last all-digit ``_`` token before it.
    Any other method is everything after the last all-digit token (``81506_Toy@3.json``: Toy@3; a model name
    between the two stays in it, and a method whose last ``_`` token is all digits is taken for a query id)."""
    path = Path(path)
    stem = path.name[:-len(".json")] if path.name.endswith(".json") else path.name
    match = METHOD_AT_END.search(stem)
    method = match.group(1) if match else None
    head = stem[:match.start()] if match else stem
    tokens = head.split("_")
    digits = [index for index, token in enumerate(tokens) if token.isdigit()]
    query_id = int(tokens[digits[-1]]) if digits else None
    if method is None and digits:
        method = "_".join(tokens[digits[-1] + 1:]) or None
    group = None
    for name in (stem, *(p.name for p in path.parents)):
        found = _GROUP_TOKEN.search(name)
        if found:
            group = found.group(1)
            break
    if group is None:
        group = next((p.name for p in path.parents if is_group_name(p.name)), None)
    return AnswerIdentity(query_id, method, group)


class UnusableAnswer(InputError):
    """A file that cannot be replayed or cached; ``reason`` is a short code for the per-reason counts."""

    def __init__(self, reason: str, problem: str, *, path: str | Path, field: str | None = None,
                 fix: str | None = None):
        self.reason = reason
        super().__init__(problem, path=path, field=field, fix=fix)


@dataclass
class RecordedAnswer:
    """An answer file read for replay, caching or conversion: only what every layout has is required
    (``answer_generation`` and ``trys`` or ``tree``; the query and its functions may come from a query set)."""

    path: Path
    data: dict[str, Any]
    identity: AnswerIdentity

    @property
    def generation(self) -> dict[str, Any]:
        return self.data["answer_generation"]

    @property
    def query(self) -> str | None:
        """The query text (None in the few files that do not keep it: their query comes from a query set)."""
        return self.generation.get("query") or None

    @property
    def functions(self) -> list[dict]:
        return self.generation.get("function") or []

    @property
    def function_names(self) -> list[str]:
        return [f.get("function", f).get("name") for f in self.functions if isinstance(f, dict)]

    @property
    def flavour(self) -> str:
        """``current`` when the functions are wrapped ``{"type": "function", "function": ...}``."""
        return "current" if any(isinstance(f, dict) and "function" in f for f in self.functions) else "legacy"

    @property
    def kind(self) -> str:
        return DFS if "tree" in self.data else COT

    @property
    def query_id(self) -> int | None:
        """From the file (``answer_generation.query_id``, written by some forks) or else its name."""
        recorded = self.generation.get("query_id")
        if isinstance(recorded, int) and not isinstance(recorded, bool):
            return recorded
        if isinstance(recorded, str) and recorded.isdigit():
            return int(recorded)
        return self.identity.query_id

    @property
    def method(self) -> str:
        """The method: the file name's, else what the file holds (CoT@{try_count} or DFS_woFilter_w2)."""
        if self.identity.method:
            return self.identity.method
        if self.kind == DFS:
            return "DFS_woFilter_w2"
        return f"CoT@{max(len(self.data.get('trys') or []), 1)}"

    @property
    def messages(self) -> list[dict]:
        trains = self.generation.get("train_messages") or []
        return [m for messages in trains if isinstance(messages, list) for m in messages if isinstance(m, dict)]


def check_structure(data: dict, path: Path) -> None:
    """UnusableAnswer ("malformed") naming the first node, message or call the walkers cannot take."""
    problem = structure_problem(data)
    if problem is not None:
        field, what = problem
        raise UnusableAnswer("malformed", what, path=path, field=field,
                             fix="this file was not written by a ToolBench / StableToolBench run (or was edited): "
                             "re-run that query, or leave the file out")


# the reader's reason codes as the answer files' per-reason counts have always named them
_REASONS = {"not_utf8": "not_json", "binary": "not_json", "too_deep": "too_deeply_nested"}


def unusable(refused: UnreadableFile, damaged_fix: str) -> UnusableAnswer:
    """The reader's refusal of an answer file as an UnusableAnswer; ``damaged_fix``: the fix of bytes that are
    not text (a file the run wrote and something damaged)."""
    reason = _REASONS.get(refused.reason, refused.reason)
    fix = damaged_fix if reason == "not_json" else refused.fix
    return UnusableAnswer(reason, refused.problem, path=refused.path or "", field=refused.field, fix=fix)


def too_deep_to_parse(text: str, path: Path) -> UnusableAnswer:
    depth, line, column = json_depth(text)
    return UnusableAnswer("too_deeply_nested", f"the JSON nests {depth} levels deep, more than the parser follows "
                          "(answer files nest a few dozen levels)", path=path, field=f"line {line} column {column}",
                          fix="leave this file out: it is not an answer file")


def read_recorded(path: str | Path) -> RecordedAnswer:
    """Read one answer file of any layout; UnusableAnswer (an InputError with a reason code) when it is not one."""
    path = Path(path)
    try:
        text = read_text(path, "answer file")
    except UnreadableFile as exc:
        raise unusable(exc, "the file is damaged: re-run that query") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UnusableAnswer("not_json", f"not valid JSON ({exc})", path=path,
                             fix="the file was probably cut short: re-run that query") from None
    except RecursionError:  # json raises RecursionError, not ValueError, for nesting deeper than it follows
        raise too_deep_to_parse(text, path) from None
    if not isinstance(data, dict) or not isinstance(data.get("answer_generation"), dict):
        raise UnusableAnswer("not_an_answer_file", "no answer_generation object: not a raw answer file", path=path,
                             field="answer_generation", fix="pass raw answer files (CoT trys or a DFS tree)")
    generation = data["answer_generation"]
    if "query" in generation and not isinstance(generation["query"], str):
        raise UnusableAnswer("no_query", "the query is not a string", path=path, field="answer_generation.query")
    functions = generation.get("function", [])
    if not isinstance(functions, list) or not all(isinstance(f, dict) and isinstance(f.get("function", f), dict)
                                                   and isinstance(f.get("function", f).get("name"), str)
                                                   for f in functions):
        raise UnusableAnswer("no_function_list", "the function list is missing or malformed", path=path,
                             field="answer_generation.function")
    if not isinstance(data.get("trys"), list) and not (isinstance(data.get("tree"), dict)
                                                       and isinstance(data["tree"].get("tree"), dict)):
        raise UnusableAnswer("no_trajectory", "neither CoT trys nor a DFS tree", path=path, field="trys / tree.tree")
    check_structure(data, path)
    return RecordedAnswer(path=path, data=data, identity=identify_answer_path(path))


# a run folder (tba run) has this file at its root (runs/folder.py's MANIFEST: answers/ sits below runs/)
RUN_MANIFEST = "manifest.json"


def expand_answer_inputs(inputs: list[str | Path]) -> list[Path]:
    """Files as given; folders: every *.json below them, sorted, except in a run folder (a manifest.json at its
    root): its answer files only, ``{group}/*.json`` (its manifest, evaluations, converted and eval/ files, and the
    partial trees of failed/, are no answers). A missing input is an InputError."""
    files: list[Path] = []
    for item in inputs:
        item = Path(item)
        if item.is_dir() and (item / RUN_MANIFEST).is_file():
            files.extend(path for path in files_under(item, "*/*.json", recursive=False)
                         if is_group_name(path.parent.name))
        elif item.is_dir():
            files.extend(files_under(item, "*.json"))
        elif item.exists() or item.is_symlink():
            files.extend(regular_files([item]))
        else:
            raise InputError("answer folder or file not found", path=item,
                             fix="pass answer files (*.json) or folders holding them, in any layout")
    return files
