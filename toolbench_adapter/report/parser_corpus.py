"""Model outputs to parse, read from JSONL of texts, answer files or run folders.

- JSONL: one record a line with a ``"text"`` field (``"message"``, an assistant message dict, optional;
  ``"source"`` optional). ``.jsonl`` files are read this way.
- Answer files (StableToolBench raw answer JSON, reference §8): the assistant messages of
  ``answer_generation.train_messages`` (deduplicated: the lists are nested prefixes of one another);
  without them, the Thought / Action / Action Input node triples of ``trys`` chains or the DFS ``tree``.
- ToolBench training-style files (``{"conversations": [{"from": "assistant", "value": ...}]}``, at any
  depth): every assistant value.
- Run folders written by ``tba run`` (a ``manifest.json``): every model call's raw output as the run recorded
  it in its step records (``steps/`` or ``steps.jsonl``, see ``toolbench_adapter/runs/call_record.py``), with the
  parser it ran with and the error kind and JSON rung that parser recorded live. A group folder, an answer
  file or a step file inside a run folder reads the same records for that group or query; the run's own logs
  (``queries.jsonl``, ``errors.jsonl``, ``manifest.json``) are refused by name. A run written before outputs
  were recorded is refused (its group folders still read as answer files: only the calls each answer keeps).
- Folders: every ``.json`` / ``.jsonl`` file below them, recursively, in sorted order; run folders below
  them are read as run folders.

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

from toolbench_adapter.errors import InputError
from toolbench_adapter.files import input_files
from toolbench_adapter.files.folder_files import files_under
from toolbench_adapter.files.input_files import read_json
from toolbench_adapter.protocol.react import ACTION_INPUT_MARKER, ACTION_MARKER, THOUGHT_MARKER
from toolbench_adapter.queryset.queries import is_group_name
from toolbench_adapter.runs.folder import ERRORS, FAILED_DIR, MANIFEST, QUERY_STATS, STEPS, STEPS_DIR

_MAX_DEPTH = 6
MESSAGE_PARSER = "openai-tools"  # the parser that reads assistant messages (native tool calls), not text


@dataclass
class ModelOutput:
    source: str
    text: str
    message: dict | None = None  # the assistant message, when the output came as one (openai-tools reads it)
    # read from a run's step records: {"parser", "error", "rung"} as that parser read the output live
    recorded: dict | None = None


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
        if not path.exists():
            raise InputError("no such file or folder", path=path, fix="check the path: answer files, a JSONL of texts, "
                             "or a folder written by `tba run` (results/runs/NAME; or run `make eval` first)")
        from_run = read_in_run(path)
        if from_run is not None:
            outputs.extend(from_run)
        elif path.is_dir():
            runs = sorted(m.parent for m in path.rglob(MANIFEST) if m.is_file())
            files = [p for p in files_under(path) if p.suffix in (".json", ".jsonl")
                     and not any(run in p.parents for run in runs)]
            if not files and not runs:
                raise InputError("the folder holds no .json or .jsonl files", path=path,
                                 fix="point --input at answer files, a run folder or a JSONL of texts")
            for run in runs:
                outputs.extend(read_in_run(run) or [])
            for file in files:
                outputs.extend(read_file(file))
        else:
            outputs.extend(read_file(path))
    return outputs


# ---------------------------------------------------------------- run folders

RUN_LOGS = (QUERY_STATS, ERRORS, MANIFEST)  # what a run writes about itself: no model text


def run_root(path: Path) -> Path | None:
    """The run folder ``path`` is, or lies in (up to three levels down: RUN/steps/G1_tool/1_CoT@1.jsonl)."""
    for candidate in [path, *path.parents][:4]:
        if (candidate / MANIFEST).is_file():
            return candidate
    return None


def read_in_run(path: Path) -> list[ModelOutput] | None:
    """The outputs ``path`` stands for when it is a run folder or lies in one; None when it does not, or when
    it is a group folder or answer file of a run that recorded no outputs (read as answer files then)."""
    run = run_root(path)
    if run is None:
        return None
    parts = path.relative_to(run).parts
    if parts == (STEPS,):
        parts = ()  # the joined step records: the whole run
    elif parts == (FAILED_DIR,):
        return None  # the partial trees of failed queries: read as answer files
    elif parts[:1] in ((STEPS_DIR,), (FAILED_DIR,)):
        parts = parts[1:]  # steps/{group}/{query}.jsonl, failed/{group}/{query}.json: the same query's records
    elif len(parts) == 1 and parts[0] in RUN_LOGS:
        raise InputError(f"{parts[0]} is the run's own log, not model outputs", path=path,
                         fix=f"pass the run folder itself (--input {run}): its step records hold every model "
                         "call's raw output")
    if parts and not is_group_name(parts[0]):
        return None  # eval/, converted/ and other folders of the run: read as plain files
    scope = _scope(parts)
    if scope is None:
        return None
    records = [r for r in _step_records(run) if _in_scope(r, scope)]
    outputs, missing = outputs_from_records(records, run.name)
    if not parts:
        if not records:
            raise InputError("the run folder holds no step records (steps/ or steps.jsonl)", path=run,
                             fix="pass a folder written by tba run, or its answer files")
    elif not outputs:
        return None  # a group folder or answer file of an older run: its answer files, as before
    if missing:
        raise InputError(f"{missing} of {missing + len(outputs)} model calls in the step records keep no raw "
                         "output (recorded by an older toolbench-adapter)", path=run / STEPS, field="output",
                         fix=f"rerun the run with this version to record them, or pass its group folders "
                         f"(e.g. --input {run}/G1_instruction: answer files keep only the calls of the answer)")
    return outputs


def _scope(parts: tuple[str, ...]) -> tuple | None:
    """() for the whole run, (group,) or (group, query id, method) from the rest of the path."""
    if not parts:
        return ()
    if len(parts) == 1:
        return (parts[0],)
    stem = Path(parts[1]).stem
    if "_" not in stem:
        return None
    query_id, method = stem.split("_", 1)
    return parts[0], query_id, method


def _in_scope(record: dict, scope: tuple) -> bool:
    key = (str(record.get("group")), str(record.get("query_id")), str(record.get("method")))
    return key[: len(scope)] == scope


def _step_records(run: Path) -> list[dict]:
    """The per-query step files (current even in a run still going), else the joined steps.jsonl."""
    files = files_under(run / STEPS_DIR, "*/*.jsonl", recursive=False)
    if not files and (run / STEPS).is_file():
        files = [run / STEPS]
    records = []
    for file in files:
        with open(file, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as exc:
                    raise InputError(f"line {number}: not a step record ({exc})", path=file,
                                     fix="step records as tba run writes them; rerun the query to rewrite it") from None
                if isinstance(record, dict):
                    records.append(record)
    return records


def outputs_from_records(records: list[dict], run_name: str) -> tuple[list[ModelOutput], int]:
    """(one output per model call that reached a parser, calls whose first record keeps no output). A call
    whose model request failed (no parser read it) is no model output and is left out."""
    from toolbench_adapter.runs.call_record import OUTPUT, OUTPUT_TOOL_CALLS

    outputs: list[ModelOutput] = []
    seen: set[tuple] = set()
    missing = 0
    for record in records:
        key = (record.get("group"), record.get("query_id"), record.get("method"), record.get("turn"))
        if record.get("parser") is None or key in seen:
            continue
        seen.add(key)
        if OUTPUT not in record:
            missing += 1
            continue
        message: dict = {"role": "assistant", "content": record[OUTPUT]}
        if record.get(OUTPUT_TOOL_CALLS):
            message["tool_calls"] = record[OUTPUT_TOOL_CALLS]
        text = record[OUTPUT] if isinstance(record[OUTPUT], str) else message_text(message)
        # an assistant message only where the run read one (native tool calls): a text model's output is
        # plain text, which the message parser (openai-tools) does not apply to
        native = record["parser"] == MESSAGE_PARSER or "tool_calls" in message
        outputs.append(ModelOutput(
            source=f"{run_name}/{key[0]}/{key[1]}_{key[2]}#turn{key[3]}", text=text,
            message=message if native else None,
            recorded={"parser": record["parser"], "error": record.get("error"), "rung": record.get("rung")}))
    return outputs, missing


def read_file(path: Path) -> list[ModelOutput]:
    if path.suffix == ".jsonl":
        return list(read_jsonl(path))
    data = read_json(path, "corpus", what="model output file")
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
    for number, record in input_files.read_jsonl(path, "corpus", what="JSONL file"):
        check_jsonl_record(record, path, number)
        yield ModelOutput(source=str(record.get("source") or f"{path.name}:{number}"),
                          text=record["text"], message=record.get("message"))


def check_jsonl_record(record: Any, path: Path | str, number: int) -> None:
    """A JSONL line's value has a string "text" (and an object "message", if any); InputError naming the file and
    line otherwise."""
    if not isinstance(record, dict) or not isinstance(record.get("text"), str):
        raise InputError(f"line {number}: needs a string \"text\" field", path=path, field="text",
                         fix='write one {"text": "..."} object per line')
    if record.get("message") is not None and not isinstance(record["message"], dict):
        raise InputError(f"line {number}: \"message\" must be an object", path=path, field="message",
                         fix="give the assistant message as a JSON object, or leave it out")


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
