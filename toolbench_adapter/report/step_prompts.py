"""The prompt each model call received, reconstructed for the report (runs do not store prompts).

An answer file keeps the conversation of its answer path (``answer_generation.train_messages``, the last list
is the whole path) and the function list as sent (``answer_generation.function``). Rendering the messages
before the k-th assistant message through the run's dialect (name and options from the manifest) gives the
k-th model call's prompt. Queries without an answer path (invalid answers) and DFS branches off the answer
path keep no messages: their calls show no prompt rather than a guessed one.

Prompts of one query share most of their text, so the page stores the longest one once and every call as
(length of the prefix it shares with it, its own rest): exact, and a 765-query run stays small.
"""

from __future__ import annotations

from typing import Any

from ..dialects import make_dialect
from ..toolset import Toolset

RECONSTRUCTED = "reconstructed"
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
    prompt block: {"kind": "text" | "messages", "full": ..., "calls": [[shared, rest], ...], "tools", ...}."""
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
    last = rendered[-1]
    block: dict[str, Any] = {"how": RECONSTRUCTED, "stop": last.stop, "prefill": last.prefill}
    if last.prompt is not None:
        block["kind"], full = "text", last.prompt
        block["calls"] = [_shared_text(r.prompt or "", full) for r in rendered]
    else:
        block["kind"], full = "messages", last.messages or []
        block["calls"] = [_shared_list(r.messages or [], full) for r in rendered]
    block["full"] = full
    if last.tools:
        block["tools"] = last.tools
    for number, (_index, owned) in enumerate(turns):
        for node_index in owned:
            nodes[node_index]["mc"] = number
    return block


def _shared_text(text: str, full: str) -> list:
    """[length of the prefix ``text`` shares with ``full``, the rest of ``text``] (binary search, C-speed)."""
    low, high = 0, min(len(text), len(full))
    while low < high:
        middle = (low + high + 1) // 2
        if full.startswith(text[:middle]):
            low = middle
        else:
            high = middle - 1
    return [low, text[low:]]


def _shared_list(items: list, full: list) -> list:
    shared = 0
    while shared < min(len(items), len(full)) and items[shared] == full[shared]:
        shared += 1
    return [shared, items[shared:]]
