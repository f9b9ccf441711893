"""Model outputs to parse, read from JSONL of texts, answer files or run folders.

- JSONL: one record a line with a ``"text"`` field (``"message"``, an assistant message dict, optional;
  ``"source"`` optional). ``.jsonl`` files are read this way.
- Answer files (StableToolBench raw answer JSON, reference §8): the assistant messages of
  ``answer_generation.train_messages`` (deduplicated: the lists are nested prefixes of one another);
  without them, the Thought / Action / Action Input node triples of ``trys`` chains or the DFS ``tree``.
- ToolBench training-style files (``{"conversations": [{"from": "assistant", "value": ...}]}``, at any
  depth): every assistant value.
- Folders: every ``.json`` / ``.jsonl`` file below them, recursively, in sorted order.

An assistant message whose content is only the thought (old answer files keep the call in
``function_call`` / ``tool_calls``) is turned back into the ReAct text the model wrote:
``Thought: {content}\\nAction: {name}\\nAction Input: {arguments}``. Content that already holds an
``Action:`` line is the full raw generation (STB since 2024-09) and is kept verbatim.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..protocol.react import ACTION_INPUT_MARKER, ACTION_MARKER, THOUGHT_MARKER

_MAX_DEPTH = 6


@dataclass
class ModelOutput:
    source: str
    text: str
    message: dict | None = None  # the assistant message, when the output came as one (openai-tools reads it)


def react_text(thought: str, name: str, arguments: str) -> str:
    return f"{THOUGHT_MARKER}{thought}\n{ACTION_MARKER}{name}\n{ACTION_INPUT_MARKER}{arguments}"


def message_text(message: dict) -> str:
    """The ReAct text of an assistant message (see the module docstring)."""
    content = message.get("content") or ""
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    calls = message.get("tool_calls") or []
    function = calls[0].get("function") if calls and isinstance(calls[0], dict) else message.get("function_call")
    if not isinstance(function, dict) or ACTION_MARKER.strip() in content:
        return content
    arguments = function.get("arguments", "")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return react_text(content, str(function.get("name", "")), arguments)


def read_outputs(paths: list[str | Path]) -> list[ModelOutput]:
    outputs: list[ModelOutput] = []
    for path in map(Path, paths):
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl") and p.is_file())
            if not files:
                raise InputError("the folder holds no .json or .jsonl files", path=path,
                                 fix="point --input at answer files, a run folder or a JSONL of texts")
            for file in files:
                outputs.extend(read_file(file))
        elif path.is_file():
            outputs.extend(read_file(path))
        else:
            raise InputError("no such file or folder", path=path, fix="check the path")
    return outputs


def read_file(path: Path) -> list[ModelOutput]:
    if path.suffix == ".jsonl":
        return list(read_jsonl(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"not a JSON file: {exc}", path=path,
                         fix="give an answer file (JSON) or a .jsonl file of {\"text\": ...} records") from None
    outputs = list(_walk(data, str(path), 0))
    seen: set[str] = set()
    unique = []
    for output in outputs:
        key = output.text if output.message is None else json.dumps(output.message, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(output)
    return unique


def read_jsonl(path: Path) -> Iterator[ModelOutput]:
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            record = parse_jsonl_record(line, path, number)
            yield ModelOutput(source=str(record.get("source") or f"{path.name}:{number}"),
                              text=record["text"], message=record.get("message"))


def parse_jsonl_record(line: str, path: Path | str, number: int) -> dict:
    """One JSONL line -> a record with a string "text"; InputError naming the file and line otherwise."""
    try:
        record = json.loads(line)
    except ValueError as exc:
        raise InputError(f"line {number}: not JSON ({exc})", path=path, fix='write one {"text": "..."} object per line') from None
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise InputError(f"line {number}: needs a string \"text\" field", path=path, field="text",
                         fix='write one {"text": "..."} object per line')
    if record.get("message") is not None and not isinstance(record["message"], dict):
        raise InputError(f"line {number}: \"message\" must be an object", path=path, field="message",
                         fix="give the assistant message as a JSON object, or leave it out")
    return record


def _walk(data: Any, source: str, depth: int) -> Iterator[ModelOutput]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(data, dict):
        if isinstance(data.get("answer_generation"), dict):
            yield from _answer_file(data, source)
            return
        if isinstance(data.get("conversations"), list):
            for index, turn in enumerate(data["conversations"]):
                if isinstance(turn, dict) and turn.get("from") == "assistant" and isinstance(turn.get("value"), str):
                    yield ModelOutput(source=f"{source}#conversations[{index}]", text=turn["value"])
            return
        for value in data.values():
            yield from _walk(value, source, depth + 1)
    elif isinstance(data, list):
        for item in data:
            yield from _walk(item, source, depth + 1)


def _answer_file(data: dict, source: str) -> Iterator[ModelOutput]:
    train = data["answer_generation"].get("train_messages") or []
    found = False
    for messages in train:
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") == "assistant":
                found = True
                yield ModelOutput(source=f"{source}#train_messages", text=message_text(message), message=message)
    if found:
        return
    chains = [t.get("chain", []) for t in data.get("trys", []) if isinstance(t, dict)]
    if isinstance(data.get("tree"), dict):
        chains.append(list(_tree_nodes(data["tree"].get("tree"))))
    for chain in chains:
        yield from _node_triples(chain, source)


def _tree_nodes(node: Any) -> Iterator[dict]:
    stack = [node]
    while stack:
        current = stack.pop()
        if not isinstance(current, dict):
            continue
        yield current
        stack.extend(reversed(current.get("children") or []))


def _node_triples(nodes: list, source: str) -> Iterator[ModelOutput]:
    """Thought -> Action -> Action Input node runs rebuilt into ReAct texts (depth-first order)."""
    nodes = [n for n in nodes if isinstance(n, dict)]
    for index, node in enumerate(nodes[:-2]):
        action, action_input = nodes[index + 1], nodes[index + 2]
        if (node.get("node_type"), action.get("node_type"), action_input.get("node_type")) == ("Thought", "Action", "Action Input"):
            yield ModelOutput(source=f"{source}#nodes",
                              text=react_text(str(node.get("description", "")), str(action.get("description", "")),
                                              str(action_input.get("description", ""))))
