"""One answer file as the HTML report shows it: a flat list of compact nodes in tree order.

CoT files give their ``trys[].chain`` lists (a ``try`` marker between tries when there are several), DFS
files their tree in pre-order (the root, an empty Action Input, is left out). Pre-order is also the order the
runner created the nodes in, so the run's step records (``steps.jsonl``) are matched to nodes in one pass:
a record with a call belongs to the next Action Input at its depth, one without a call to the next Thought.
Thought nodes are re-parsed with the run's text parser to show the parse and where it failed.

Node keys (short, the page embeds thousands of them): t (T Thought, A Action, I Action Input, try), d
(description: raw output / function name / raw arguments), z (depth), o (observation), c (status code),
pr / fin (pruned / finished), parse (re-parse of a Thought), rec (its step record), mc (the model call it
came from, when its prompt could be reconstructed: see step_prompts).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..parsers import ParsedTurn
from ..structured.rates import is_reask
from .parse_spans import parse_spans
from .taxonomy import NO_CALL

NODE_TYPES = {"Thought": "T", "Action": "A", "Action Input": "I"}


def answer_nodes(data: dict) -> list[dict]:
    if "tree" in data:
        root = (data.get("tree") or {}).get("tree") or {}
        nodes: list[dict] = []
        stack = list(reversed(root.get("children") or []))
        while stack:  # iterative pre-order: trees can be deeper than a comfortable recursion
            node = stack.pop()
            nodes.append(_compact(node))
            stack.extend(reversed(node.get("children") or []))
        return nodes
    trys = data.get("trys") or []
    nodes = []
    for index, attempt in enumerate(trys):
        if len(trys) > 1:
            nodes.append({"t": "try", "d": f"try {index + 1}", "win": bool(attempt.get("win"))})
        nodes.extend(_compact(node) for node in attempt.get("chain") or [])
    return nodes


def _compact(node: dict) -> dict:
    out: dict[str, Any] = {"t": NODE_TYPES.get(node.get("node_type"), "?"), "d": str(node.get("description") or ""),
                           "z": int(node.get("depth") or 0)}
    if node.get("observation"):
        out["o"] = str(node["observation"])
    if node.get("observation_code") is not None:
        out["c"] = node["observation_code"]
    if node.get("pruned"):
        out["pr"] = 1
    if node.get("finished"):
        out["fin"] = 1
    return out


def attach_records(nodes: list[dict], records: list[dict]) -> int:
    """Give each step record to its node (see the module note); returns how many found their node."""
    position = matched = 0
    for record in records:
        if is_reask(record):  # a discarded reply that was asked again: no node of the tree stands for it
            continue
        wanted = "I" if record.get("call") is not None or record.get("status") is not None else "T"
        for index in range(position, len(nodes)):
            node = nodes[index]
            if node["t"] == wanted and node["z"] == record.get("step"):
                node["rec"] = _compact_record(record)
                position, matched = index + 1, matched + 1
                break
    return matched


# step-record fields shown per model call and per tool call, when the run recorded them (newer runs)
RECORD_FIELDS = {"turn": "turn", "prompt_tokens": "pt", "completion_tokens": "ct", "model_latency_s": "ml",
                 "finish_reason": "fr", "reply_kind": "rk", "http_status": "hs", "attempts": "at",
                 "latency_s": "tl"}


def _compact_record(record: dict) -> dict:
    out = {"e": record.get("error"), "r": record.get("rung"), "s": record.get("status"), "src": record.get("source")}
    out.update({short: record.get(name) for name, short in RECORD_FIELDS.items()})
    if record.get("detail"):
        out["det"] = str(record["detail"])
    if record.get("suffix_match_differs"):
        out["sm"] = 1
    return {k: v for k, v in out.items() if v is not None}


def group_calls(nodes: list[dict]) -> list[dict]:
    """Number the model calls of a trajectory: each node gets ``k`` (its call's index); returns one dict per
    call with what the step records say about it (turn, tokens, latency, finish reason) and ``mc`` (its
    reconstructed prompt, see step_prompts).

    A call is a Thought and/or its Action + Action Input pairs. The step records' ``turn`` tells two calls
    apart where the nodes cannot (a call without text right after another's Action Input); without
    records, a Thought or a reconstructed prompt starts a call."""
    keys: list[tuple | None] = [None] * len(nodes)
    for index, node in enumerate(nodes):
        turn = (node.get("rec") or {}).get("turn")
        if turn is not None and node["t"] in ("I", "T"):
            keys[index] = ("turn", turn)
    for index in reversed(range(len(nodes) - 1)):  # an Action takes its Input's turn, a Thought its Action's
        node, following = nodes[index], nodes[index + 1]
        if keys[index] is None and node["t"] in ("A", "T") and following["t"] in ("A", "I") \
                and following["z"] == node["z"] + 1:
            keys[index] = keys[index + 1]
    calls: list[dict] = []
    previous = None
    for index, node in enumerate(nodes):
        if node["t"] == "try":
            previous = None
            continue
        key = keys[index] or (("mc", node["mc"]) if "mc" in node else None)
        if key is None:
            key = ("T", index) if node["t"] == "T" or previous is None else previous
        if key != previous:
            calls.append({"turn": key[1] if key[0] == "turn" else None})
        call = calls[-1]
        node["k"] = len(calls) - 1
        if "mc" in node:
            call["mc"] = node["mc"]
        record = node.get("rec") or {}
        for name in ("pt", "ct", "ml", "fr"):
            if record.get(name) is not None and name not in call:
                call[name] = record[name]
        previous = key
    return [{k: v for k, v in call.items() if v is not None} for call in calls]


def attach_parses(nodes: list[dict], parse) -> None:
    """Re-parse every Thought with ``parse(text) -> ParsedTurn`` (a text parser of the run)."""
    for node in nodes:
        if node["t"] == "T":
            node["parse"] = parse_view(node["d"], parse(node["d"]))


def parse_view(text: str, turn: ParsedTurn) -> dict:
    view: dict[str, Any] = {"e": turn.error.value, "sp": [list(span) for span in parse_spans(text, turn)]}
    if turn.rung:
        view["r"] = turn.rung.value
    if turn.thought:
        view["th"] = turn.thought
    if turn.calls:
        view["calls"] = [[c.name, _arguments_text(c.arguments, c.arguments_raw), c.arguments is not None]
                         for c in turn.calls]
    if turn.final_answer is not None:
        view["fa"] = turn.final_answer
    if turn.details:
        view["det"] = list(turn.details)
    return view


def _arguments_text(arguments: dict | None, raw: str) -> str:
    """Decoded arguments as compact JSON; the raw text when they did not decode."""
    return raw if arguments is None else json.dumps(arguments, ensure_ascii=False)


def step_counts(nodes: list[dict]) -> tuple[Counter, Counter]:
    """Steps per parse error kind and per status code ("no call" for a turn without one). The step records
    say it when there are any; otherwise (released answers) the stored codes and the re-parses do."""
    errors: Counter = Counter()
    statuses: Counter = Counter()
    records = [node["rec"] for node in nodes if "rec" in node]
    for record in records:
        errors[str(record.get("e") or "none")] += 1
        statuses[NO_CALL if record.get("s") is None else int(record["s"])] += 1
    if not records:
        for node in nodes:
            if node["t"] == "I" and node.get("c") is not None:
                statuses[int(node["c"])] += 1
            if "parse" in node:
                errors[node["parse"]["e"]] += 1
    return errors, statuses


def final_answer_text(raw: str) -> str:
    """The answer a person reads: the final_answer field of the Finish arguments when they decode."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        return raw
    if isinstance(data, dict) and isinstance(data.get("final_answer"), str):
        return data["final_answer"]
    return raw
