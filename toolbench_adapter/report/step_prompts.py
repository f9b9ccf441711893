"""The prompt each model call received, for the report: recorded, or reconstructed for older runs.

A run records every model call's request in its step records (``toolbench_adapter/runs/call_record.py``): the
report shows those exactly, for every call, valid answer or not. Runs written before that (and plain folders
of upstream answer files) get them reconstructed: an answer file keeps the conversation of its answer path (``answer_generation.train_messages``, the last list
is the whole path) and the function list as sent (``answer_generation.function``). Rendering the messages
before the k-th assistant message through the run's dialect (name and options from the manifest) gives the
k-th model call's prompt. Queries without an answer path (invalid answers) and DFS branches off the answer
path keep no messages: their calls show no prompt rather than a guessed one.

Prompts of one query share most of their text, so the page stores each call as (length of the prefix it
shares with the previous call's prompt, its own rest): exact, and a 765-query run stays small. Text lengths
are counted as JavaScript counts them (UTF-16 code units), so the page cuts where Python did.
"""

from __future__ import annotations

from typing import Any

from toolbench_adapter.queryset.toolset import Toolset
from toolbench_adapter.runs.call_record import decode_requests, shared_prefix

from ..dialects import make_dialect

RECONSTRUCTED, RECORDED = "reconstructed", "recorded"
DIALECT_KEYS_NOT_OPTIONS = ("name", "default_parser")


def dialect_of(manifest: dict | None):
    """The run's dialect with its recorded options, or None (no manifest, unknown dialect)."""
    if not manifest:
        return None
    recorded = manifest.get("dialect")
    if isinstance(recorded, dict):
        name = recorded.get("name")
        options = {k: v for k, v in recorded.items() if k not in DIALECT_KEYS_NOT_OPTIONS}
    else:
        name, options = recorded, (manifest.get("config") or {}).get("dialect_options") or {}
    if not name:
        return None
    try:
        return make_dialect(str(name), **options)
    except Exception:  # an unknown or changed dialect: no prompt rather than a wrong one
        return None


def answer_path_turns(nodes: list[dict], conversation: list[dict]) -> list[tuple[int, list[int]]]:
    """(index of the assistant message, indexes of its nodes) per model call on the answer path.

    The path is a try of a CoT file (the one that fits the messages best) or the finished branch of a DFS
    tree. Walks it in order: a call's Thought (when it wrote text), then one Action + Action Input per tool
    call of that assistant message. Stops at the first node that does not fit, so a node is never given a
    wrong prompt."""
    tries: list[list[int]] = [[]]
    for index, node in enumerate(nodes):
        if node["t"] == "try":
            tries.append([])
        else:
            tries[-1].append(index)
    if _is_tree(nodes):
        tries = [[i for i in tries[0] if nodes[i].get("fin")]]
    return max((_walk(nodes, path, conversation) for path in tries if path), key=len, default=[])


def _walk(nodes: list[dict], path: list[int], conversation: list[dict]) -> list[tuple[int, list[int]]]:
    turns: list[tuple[int, list[int]]] = []
    at = 0
    for index, message in enumerate(conversation):
        if message.get("role") != "assistant" or at >= len(path):
            continue
        owned: list[int] = []
        if nodes[path[at]]["t"] == "T":
            owned.append(path[at])
            at += 1
        for call in message.get("tool_calls") or []:
            if at + 1 >= len(path) or nodes[path[at]]["t"] != "A" or nodes[path[at + 1]]["t"] != "I":
                break
            if nodes[path[at + 1]]["d"] != str((call.get("function") or {}).get("arguments", "")):
                return turns  # the path and the messages disagree: stop here
            owned += [path[at], path[at + 1]]
            at += 2
        if not owned:
            return turns
        turns.append((index, owned))
    return turns


def _is_tree(nodes: list[dict]) -> bool:
    """A DFS tree holds branches: more than one node at some depth."""
    depths = [n["z"] for n in nodes if n["t"] != "try"]
    return len(depths) != len(set(depths))


def render_prompts(data: dict, nodes: list[dict], dialect) -> dict | None:
    """Attach ``mc`` (model call number) to the nodes of each reconstructed call and return the query's
    prompt block (see page_block), or None where the answer file keeps no messages to rebuild them from."""
    generation = data.get("answer_generation") or {}
    lists = generation.get("train_messages") or []
    conversation = lists[-1] if lists and isinstance(lists[-1], list) else []
    if dialect is None or not conversation:
        return None
    turns = answer_path_turns(nodes, conversation)
    if not turns:
        return None
    toolset = Toolset(query=None, flavour="", functions=list(generation.get("function") or []), routes={})
    rendered = []
    for index, _owned in turns:
        try:
            rendered.append(dialect.render(conversation[:index], toolset))
        except Exception:  # messages this dialect cannot render (an answer file of another run)
            return None
    block = page_block(RECONSTRUCTED, [{"prompt": r.prompt if r.prompt is not None else r.messages or [],
                                         "kind": "text" if r.prompt is not None else "messages", "tools": r.tools,
                                         "stop": r.stop, "prefill": r.prefill} for r in rendered])
    for number, (_index, owned) in enumerate(turns):
        for node_index in owned:
            nodes[node_index]["mc"] = number
    return block


def recorded_prompts(records: list[dict]) -> dict | None:
    """The query's prompt block from its step records (every model call, as sent), or None when the run
    recorded no requests. ``turns`` gives each call's turn: ``link_calls`` points the page's calls at them."""
    requests = decode_requests(records)
    if not requests:
        return None
    block = page_block(RECORDED, requests)
    block["turns"] = [request["turn"] for request in requests]
    return block


def link_calls(calls: list[dict], block: dict) -> None:
    """Give each model call of the page (trajectories.group_calls) the index of its recorded prompt."""
    index = {turn: number for number, turn in enumerate(block.get("turns") or [])}
    for call in calls:
        if call.get("turn") in index:
            call["mc"] = index[call["turn"]]


PARTS = ("tools", "stop", "prefill")


def page_block(how: str, requests: list[dict]) -> dict:
    """{"how", "kind", "calls": [[shared, rest], ...], "tools", "stop", "prefill", "vary"}: each call's prompt
    as the prefix it shares with the previous call's (UTF-16 length for text) and its own rest; the parts
    sent with it as the first call's, ``vary`` holding a later call's where they differ."""
    kind = requests[0]["kind"]
    first = {part: requests[0].get(part) for part in PARTS}
    block: dict[str, Any] = {"how": how, "kind": kind, "calls": [],
                             **{k: v for k, v in first.items() if v or k != "tools"}}
    previous: Any = "" if kind == "text" else []
    for number, request in enumerate(requests):
        body = request["prompt"]
        shared = shared_prefix(body, previous) if isinstance(body, type(previous)) else 0
        length = _utf16_length(body[:shared]) if isinstance(body, str) else shared
        block["calls"].append([length, body[shared:]])
        previous = body
        differs = {part: request.get(part) for part in PARTS if request.get(part) != first[part]}
        if differs:
            block.setdefault("vary", {})[str(number)] = differs
    return block


def _utf16_length(text: str) -> int:
    """Characters as JavaScript counts them: one per code unit, two for a character beyond the BMP."""
    return len(text.encode("utf-16-le")) // 2 if not text.isascii() else len(text)
