"""Shape checks for answer files read from anywhere (released runs, forks, hand-edited copies).

The readers and walkers of answer files (conversion, cache building, replay) take nodes, messages and
calls to be what upstream writes: dicts with string names and arguments, lists of children. A file that
holds something else would stop them half-way with a TypeError; these checks name the field first, so
that one file is refused and the others go on. Walks are iterative: a tree nested deeper than Python's
recursion limit is checked here all the same (its refusal comes from the recursive walkers later).
"""

from __future__ import annotations

from typing import Any

Problem = tuple[str, str]  # (field, what is wrong)
FORWARD_ARG_COUNTS = ("single_chain_max_step", "tree_beam_size", "max_query_count", "pass_at")
_SHOWN_PATH_PARTS = 8  # a field deeper than this is shown as its head ... its tail (depth N)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def structure_problem(data: dict) -> Problem | None:
    """The first part of an answer file (a dict with answer_generation) the walkers cannot take, or None."""
    return (_forward_args_problem(data.get("forward_args")) or _trys_problem(data)
            or _list_problem(data, "compare_candidates") or _tree_problem(data.get("tree"))
            or _messages_problem((data.get("answer_generation") or {}).get("train_messages")))


def _forward_args_problem(args: Any) -> Problem | None:
    if args is None:
        return None
    if not isinstance(args, dict):
        return "forward_args", f"is {_type_name(args)}, not an object"
    for key in FORWARD_ARG_COUNTS:
        if args.get(key) is not None and not _is_count(args[key]):
            return f"forward_args.{key}", f"{args[key]!r} is not a whole number of at least 1"
    return None


def _list_problem(data: dict, key: str) -> Problem | None:
    value = data.get(key)
    return None if value is None or isinstance(value, list) else (key, f"is {_type_name(value)}, not a list")


def _trys_problem(data: dict) -> Problem | None:
    problem = _list_problem(data, "trys")
    if problem:
        return problem
    for index, attempt in enumerate(data.get("trys") or []):
        where = f"trys[{index}]"
        if not isinstance(attempt, dict):
            return where, f"is {_type_name(attempt)}, not an object with a chain"
        chain = attempt.get("chain")
        if chain is not None and not isinstance(chain, list):
            return where + ".chain", f"is {_type_name(chain)}, not a list of nodes"
        for position, node in enumerate(chain or []):
            problem = _node_problem(node, f"{where}.chain[{position}]")
            if problem:
                return problem
    return None


def _node_problem(node: Any, where: str) -> Problem | None:
    """A search node: node_type, description (function name / raw arguments / thought), observation, code."""
    if not isinstance(node, dict):
        return where, f"is {_type_name(node)}, not a node object"
    for key in ("node_type", "description", "observation"):
        if node.get(key) is not None and not isinstance(node[key], str):
            return f"{where}.{key}", f"is {_type_name(node[key])}, not a string"
    code = node.get("observation_code")
    if code is not None and (not isinstance(code, int) or isinstance(code, bool)):
        return f"{where}.observation_code", f"is {_type_name(code)}, not a status number"
    children = node.get("children")
    if children is not None and not isinstance(children, list):
        return f"{where}.children", f"is {_type_name(children)}, not a list of nodes"
    return None


def _tree_problem(tree: Any) -> Problem | None:
    if tree is None:
        return None
    if not isinstance(tree, dict):
        return "tree", f"is {_type_name(tree)}, not an object"
    root = tree.get("tree")
    if root is None:
        return None
    stack: list[tuple[Any, list[str]]] = [(root, ["tree", "tree"])]
    while stack:
        node, parts = stack.pop()
        problem = _node_problem(node, _shown(parts))
        if problem:
            return problem
        stack.extend((child, [*parts, f"children[{i}]"]) for i, child in enumerate(node.get("children") or []))
    return None


def _shown(parts: list[str]) -> str:
    if len(parts) <= _SHOWN_PATH_PARTS:
        return ".".join(parts)
    return ".".join(parts[:3]) + "..." + ".".join(parts[-3:]) + f" (depth {len(parts) - 2})"


def _messages_problem(trains: Any) -> Problem | None:
    if trains is None:
        return None
    if not isinstance(trains, list):
        return "answer_generation.train_messages", f"is {_type_name(trains)}, not a list of message lists"
    for index, messages in enumerate(trains):
        where = f"answer_generation.train_messages[{index}]"
        if not isinstance(messages, list):
            return where, f"is {_type_name(messages)}, not a list of messages"
        for position, message in enumerate(messages):
            problem = _message_problem(message, f"{where}[{position}]")
            if problem:
                return problem
    return None


def _call_problem(call: Any, where: str) -> Problem | None:
    """A call as an assistant message holds it: {"name": str, "arguments": str}."""
    if not isinstance(call, dict):
        return where, f"is {_type_name(call)}, not a call object"
    for key in ("name", "arguments"):
        if call.get(key) is not None and not isinstance(call[key], str):
            return f"{where}.{key}", f"is {_type_name(call[key])}, not a string"
    return None


def _message_problem(message: Any, where: str) -> Problem | None:
    if not isinstance(message, dict):
        return where, f"is {_type_name(message)}, not a message object"
    if message.get("function_call"):
        problem = _call_problem(message["function_call"], where + ".function_call")
        if problem:
            return problem
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        return where + ".tool_calls", f"is {_type_name(calls)}, not a list"
    for index, call in enumerate(calls or []):
        if not isinstance(call, dict):
            return f"{where}.tool_calls[{index}]", f"is {_type_name(call)}, not a call object"
        problem = _call_problem(call.get("function") or {}, f"{where}.tool_calls[{index}].function")
        if problem:
            return problem
    return None

