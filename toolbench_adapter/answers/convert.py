"""Raw answer files -> the converted format that the judges read (upstream ``convert_to_answer_format``).

Output: ``{qid: {"query", "available_tools", "answer": {"method", "total_steps", "final_answer",
"answer_details": [system -> user -> steps …]}}}``, each node ``{"role", "message", "next": [node]}``.

Randomness, reproduced exactly: upstream seeds its module RNG once with 42 and converts the files of a folder
one after another, and *every* conversion walks its step graph with ``random.choice`` over each node's
successors (also when there is only one successor, which still draws bits). So an invalid answer's fallback
(a random CoT try; a random root-to-leaf walk of a DFS tree) depends on how many steps all earlier files had
and on the file order. We use one ``random.Random(42)`` per output file, consumed in the same places, and make
the file order explicit (upstream used ``os.listdir``: the key order of an upstream converted file records it).
Deviation: a ``"function_call": null`` message does not crash (STB issue #34); it is read as no call.
"""

from __future__ import annotations

import copy
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.files.fileio import read_json

from ..errors import InputError
from ..protocol.evaluation import CONVERTER_SEED, NODE_ACTION, NODE_ACTION_INPUT, NODE_THOUGHT
from ..protocol.functions import FINISH_NAME
from .read import (
    AnswerFile,
    UnusableAnswer,
    expand_answer_inputs,
    identify_answer_path,
    iter_answer_files,
    load_answer,
    split_file_name,
)

ORDERS = ("name", "numeric", "listdir")
SKIPPED_ROLES = ("system", "user", "function", "tool")
BLANKED_ROLES = ("system", "user")  # their message is written as ""


@dataclass
class Step:
    role: str
    message: Any
    children: list[Step] = field(default_factory=list)


def tool_step(name: Any, arguments: Any, response: Any) -> Step:
    return Step("tool", {"name": name, "arguments": arguments, "response": response})


def fallback_kind(method: str, data: dict[str, Any] | None = None) -> str | None:
    """Upstream picks the invalid-answer fallback from the --method text, not from the file: kept for a method
    that names CoT or DFS (a file converted under the other's name draws as upstream's would). Any other
    method (a plug-in search method) gets the fallback of its file's shape: ``tree`` (a walked tree) as DFS,
    ``trys`` (chains) as CoT; None when the file has neither."""
    if "CoT" in method or "cot" in method:
        return "cot"
    if "DFS" in method or "dfs" in method:
        return "dfs"
    if data is not None and "tree" in data:
        return "dfs"
    if data is not None and "trys" in data:
        return "cot"
    return None


@dataclass
class Refused:
    """An answer file left out of a conversion, and why."""

    path: Path
    reason: str
    message: str  # the file, the field, what is wrong and the fix, as InputError words it


class Converter:
    def __init__(self, method: str, seed: int = CONVERTER_SEED):
        self.method = method
        self.rng = random.Random(seed)

    def convert(self, answer: AnswerFile) -> dict[str, Any]:
        generation = answer.generation
        root = Step("system", "")
        user = Step("user", generation["query"])
        root.children.append(user)
        if answer.valid:
            _append_chain(user, steps_from_messages(answer.conversation, answer.path))
        else:
            self._attach_fallback(user, answer)
        path = self.random_walk(root)
        return {
            "query": generation["query"],
            "available_tools": generation["function"],
            "answer": {
                "method": self.method,
                "total_steps": len(path),
                "final_answer": generation["final_answer"],
                "answer_details": [path_to_dict(path)],
            },
        }

    def _attach_fallback(self, user: Step, answer: AnswerFile) -> None:
        kind = fallback_kind(self.method, answer.data)
        if kind == "cot":
            trys = answer.data.get("trys") or []
            # upstream: random.choice(trys); an empty list crashed there, here it yields no steps
            chain = self.rng.choice(trys)["chain"] if trys else []
            _append_chain(user, steps_from_chain(chain, answer.path))
        elif kind == "dfs":
            if "tree" not in answer.data:
                raise InputError("an invalid DFS answer needs its tree for the random-walk fallback",
                                 path=answer.path, field="tree")
            top = copy.deepcopy(answer.data["tree"]["tree"].get("children", []))
            user.children.extend(build_tree(node) for node in top)
            purify(user, answer.path)
        else:  # this file's problem, not the method's: refused alone
            raise InputError(f"an invalid answer of method {self.method!r} needs its chains (trys) or its tree "
                             "for the fallback, and this file has neither", path=answer.path, field="trys",
                             fix="re-run this query, or leave the file out")

    def random_walk(self, root: Step) -> list[Step]:
        """Root to a leaf, drawing at every node (upstream's reduce_graph_to_sequence)."""
        path = [root]
        node = root
        while node.children:
            node = self.rng.choice(node.children)
            path.append(node)
        return path


def _append_chain(parent: Step, steps: list[Step]) -> None:
    for step in steps:
        parent.children.append(step)
        parent = step


def steps_from_messages(messages: list[dict], path: Path | None = None) -> list[Step]:
    """Flatten a valid trajectory from index 2 (after system and user) into tool / assistant steps."""
    steps: list[Step] = []
    index = 2
    while index < len(messages):
        message = messages[index]
        role = message.get("role")
        index += 1
        if role in SKIPPED_ROLES:
            continue
        if role != "assistant":
            raise InputError(f"unknown message role {role!r}", path=path,
                             field=f"answer_generation.train_messages[-1][{index - 1}].role")
        call = message.get("function_call")
        if call:  # old style: the next message holds the response (none for Finish)
            name = call.get("name")
            response = ""
            if name != FINISH_NAME and index < len(messages):
                response = messages[index].get("content")
            steps.append(tool_step(name, call.get("arguments"), response))
            index += 1
        elif message.get("tool_calls") is not None:  # new style; the assistant content is dropped
            steps.extend(_steps_from_tool_calls(message["tool_calls"], messages[index:]))
        else:
            steps.append(Step("assistant", message.get("content")))
    return steps


def _steps_from_tool_calls(calls: list[dict], later: list[dict]) -> list[Step]:
    steps = []
    for call in calls:
        function = call.get("function") or {}
        name, arguments = function.get("name"), function.get("arguments")
        if name == FINISH_NAME:
            steps.append(tool_step(name, arguments, ""))
            break  # calls after Finish are ignored
        for reply in later:  # the first tool message answering this call id; unanswered calls vanish
            if reply.get("role") == "tool" and reply.get("tool_call_id") == call.get("id"):
                steps.append(tool_step(name, arguments, reply.get("content")))
                break
    return steps


def steps_from_chain(chain: list[dict], path: Path | None = None) -> list[Step]:
    """A CoT try: Action + the following Action Input -> one tool step; Thought -> assistant step."""
    steps = []
    index = 0
    while index < len(chain):
        node = chain[index]
        kind = node.get("node_type")
        if kind == NODE_ACTION:
            argument_node = chain[index + 1] if index + 1 < len(chain) else {}
            steps.append(tool_step(node.get("description"), argument_node.get("description", ""),
                                   argument_node.get("observation", "")))
            index += 2
        elif kind == NODE_THOUGHT:
            steps.append(Step("assistant", node.get("description")))
            index += 1
        else:
            raise InputError(f"unexpected node type {kind!r} in a CoT try", path=path, field="trys[].chain")
    return steps


def build_tree(raw: dict) -> Step:
    """A DFS tree node as upstream holds it: the raw node dict is the message, children cut off."""
    children = [build_tree(child) for child in raw.get("children", [])]
    message = dict(raw)
    if children:
        message["children"] = None
    return Step(raw.get("node_type"), message, children)


def purify(node: Step, path: Path | None = None) -> None:
    """Merge Action + its first Action Input child into a tool step; Thought -> assistant (recursive)."""
    if node.role == NODE_ACTION:
        for child in node.children:
            if child.role == NODE_ACTION_INPUT:
                node.message = {"name": node.message.get("description"),
                                "arguments": child.message.get("description"),
                                "response": child.message.get("observation", "")}
                node.role = "tool"
                # the merged node keeps its other children first, then inherits the input's children
                node.children = [c for c in node.children if c is not child] + child.children
                break
    elif node.role == NODE_THOUGHT:
        node.role = "assistant"
        node.message = node.message.get("description")
    elif node.role not in (NODE_ACTION_INPUT, "system", "user"):
        raise InputError(f"unknown node type {node.role!r} in the answer tree", path=path, field="tree")
    for child in node.children:
        purify(child, path)


def path_to_dict(path: list[Step]) -> dict[str, Any]:
    tail: dict[str, Any] | None = None
    for step in reversed(path):
        tail = {"role": step.role, "message": "" if step.role in BLANKED_ROLES else step.message,
                "next": [tail] if tail is not None else []}
    assert tail is not None
    return tail


def answer_files_for(inputs: str | Path | list[str | Path], method: str | None = None,
                     order: str = "name") -> list[Path]:
    """The files to convert. A folder that holds *.json files: those (upstream's one-group layout, in
    ``order``); a folder that holds none: every *.json below it, sorted (any layout); a file: itself. The
    method substring filter applies to every file name, as upstream's."""
    files: list[Path] = []
    for item in inputs if isinstance(inputs, list) else [inputs]:
        item = Path(item)
        if not os.path.lexists(item):
            raise InputError("answer folder or file not found", path=item,
                             fix="pass a group folder of a run (results/runs/NAME/G1_instruction) or answer files")
        if item.is_dir() and next(item.glob("*.json"), None) is None:
            files.extend(p for p in expand_answer_inputs([item]) if method is None or method in p.name)
        elif not item.is_dir():  # a file, or what stands in its place (a FIFO, a link loop): the reader refuses those
            files.extend([item] if method is None or method in item.name else [])
        else:
            files.extend(iter_answer_files(item, method, order))
    return files


def file_query_id(answer: AnswerFile) -> str:
    """The query id: ``answer_generation.query_id`` when the file has one, else from its name (upstream's
    ``{qid}_{method}.json``, or the last number before the method in other layouts)."""
    recorded = answer.generation.get("query_id")
    if isinstance(recorded, (int, str)) and not isinstance(recorded, bool) and str(recorded).isdigit():
        return str(recorded)
    if answer.query_id.isdigit():  # upstream: the name up to the first "_"
        return answer.query_id
    found = identify_answer_path(answer.path).query_id
    if found is None:
        raise UnusableAnswer("no_query_id", "no query id in the file name or the file", path=answer.path,
                             field="file name", fix="name the file {query_id}_{method}.json (upstream's layout)")
    return str(found)


def ordered_files(answer_dir: str | Path | list[str | Path], method: str, order: str = "name",
                  order_from: str | Path | None = None) -> list[Path]:
    """The files to convert, in the order whose RNG consumption the output reproduces.

    ``order_from``: an upstream converted file; its key order is the order upstream read the files in.
    """
    files = answer_files_for(answer_dir, method, order)
    if order_from is None:
        return files
    reference = read_json(Path(order_from), "converted answer file (--order-from)", kind="converted answer file")
    if not isinstance(reference, dict):
        raise InputError("expected a converted answer file (a JSON object keyed by query id)", path=order_from)
    rank = {qid: position for position, qid in enumerate(reference)}
    return sorted(files, key=lambda p: rank.get(p.name.split("_")[0], len(rank)))


# what walking a file of an unexpected shape raises (shape.py names most such fields before this happens)
_WALK_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError)


def _refusal(path: Path, exc: BaseException) -> Refused:
    if isinstance(exc, InputError):
        return Refused(path, getattr(exc, "reason", "malformed"), exc.message())
    if isinstance(exc, RecursionError):
        return Refused(path, "too_deeply_nested", f"{path}: nested too deeply to walk (RecursionError)")
    return Refused(path, "malformed", f"{path}: unexpected content ({type(exc).__name__}: {exc})")


def convert_folder(answer_dir: str | Path | list[str | Path], method: str, *, order: str = "name",
                   order_from: str | Path | None = None, seed: int = CONVERTER_SEED,
                   refused: list[Refused] | None = None) -> dict[str, Any]:
    """Raises InputError when two files answer the same query id (the converted file is keyed by it).

    A file that cannot be converted (not JSON, nested too deep, a field of the wrong shape, no query id)
    raises InputError, or, when ``refused`` is a list, is appended to it and left out: the other files
    convert as if it were not there (the RNG is rewound to before it)."""
    if not method:
        raise InputError("--method must not be empty", fix="e.g. --method CoT@1 or --method DFS_woFilter_w2")
    converter = Converter(method, seed)
    converted: dict[str, Any] = {}
    seen: dict[str, Path] = {}
    for path in ordered_files(answer_dir, method, order, order_from):
        state = converter.rng.getstate()
        try:
            answer = load_answer(path)
            query_id = file_query_id(answer)
            if query_id in seen:  # the run's shape, not this file's: never a refusal
                raise _AnsweredTwice(f"query id {query_id} is answered twice (also by {seen[query_id]})", path=path,
                                     field="query id", fix="convert one run (one file per query id) at a time")
            converted[query_id] = converter.convert(answer)
            seen[query_id] = path
        except _AnsweredTwice:
            raise
        except (InputError, RecursionError, *_WALK_ERRORS) as exc:
            if refused is None:
                raise
            refused.append(_refusal(path, exc))
            converter.rng.setstate(state)  # a refused file draws nothing: the others convert as without it
    return converted


class _AnsweredTwice(InputError):
    pass


def methods_found(answer_dir: str | Path | list[str | Path]) -> list[str]:
    """The methods (file-name tails, e.g. CoT@1) of the answer files in a folder, for error messages."""
    return sorted({split_file_name(p.name)[1] for p in answer_files_for(answer_dir)})


