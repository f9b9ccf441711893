"""The assistant turns of a recorded answer file (reference §7.1, §8), as a tree the replay backend can walk.

A turn is an optional Thought node (its description is the text) followed by an Action node (function
name) and an Action Input node (raw arguments); the children of that Action Input node are the next turns.
A Thought with no Action after it is a turn that made no call (text only); its children are the next
turns. The node types alone cannot tell "Thought + call" from "text-only Thought, then a call without
text" when the Thought has a single Action child, so other evidence decides: in DFS trees a Thought that
DFS expanded itself has a non-zero expand_num (only the last node of a turn is expanded); in any file, a
Thought whose text is an assistant message without a call in train_messages was a text-only turn. Else
it is read as one turn (the usual case); a Thought with several children is text only. CoT files hold one
chain per try, DFS files one tree; each try is its own tree.

Turns are indexed by (path, attempt): path = the (name, raw arguments) of the calls made before the turn
on its branch, attempt = its position among its siblings. Two turns can share a key (a text-only turn and
its first child; identical sibling calls); the index keeps them in preorder, which is the order an
upstream-shaped search (CoT tries, then DFSDT depth first, siblings in order) asks for them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

PathKey = tuple[tuple[str, str], ...]
TurnKey = tuple[PathKey, int]


@dataclass
class Turn:
    text: str | None
    call: tuple[str, str] | None  # (function name, raw arguments); None for a text-only turn
    children: list[Turn] = field(default_factory=list)
    # the turn's last recorded node (the one DFSDT expanded next): its depth, pruned flag and code
    last: dict | None = field(default=None, repr=False, compare=False)


def _turns_below(node: dict, text_only: frozenset[str] = frozenset()) -> list[Turn]:
    turns = []
    for child in node.get("children") or []:
        kind = child.get("node_type")
        if kind == "Thought":
            below = child.get("children") or []
            alone = child.get("expand_num", 0) != 0 or child.get("description") in text_only
            if len(below) == 1 and below[0].get("node_type") == "Action" and not alone:
                turns.append(_call_turn(child.get("description"), below[0], text_only))
            else:
                turns.append(Turn(child.get("description"), None, _turns_below(child, text_only), child))
        elif kind == "Action":
            turns.append(_call_turn(None, child, text_only))
    return turns


def _call_turn(text: str | None, action: dict, text_only: frozenset[str]) -> Turn:
    inputs = [c for c in action.get("children") or [] if c.get("node_type") == "Action Input"]
    arguments = inputs[0].get("description", "") if inputs else ""
    below = _turns_below(inputs[0], text_only) if inputs else []
    return Turn(text, (action.get("description") or "", arguments or ""), below, inputs[0] if inputs else action)


def _text_only_messages(answer: dict) -> frozenset[str]:
    """Contents of recorded assistant messages that made no call: those were text-only turns."""
    generation = answer.get("answer_generation") or {}
    texts = set()
    for messages in generation.get("train_messages") or []:
        for message in messages if isinstance(messages, list) else []:
            if (isinstance(message, dict) and message.get("role") == "assistant" and message.get("content")
                    and not message.get("function_call") and not message.get("tool_calls")):
                texts.add(message["content"])
    return frozenset(texts)


def _chain_as_tree(chain: list[dict]) -> dict:
    """A CoT chain (root excluded) as a root node with nested single children; the input is not changed."""
    root: dict = {"node_type": "Action Input", "description": "", "children": []}
    parent = root
    for node in chain:
        copy = {**node, "children": []}
        parent["children"] = [copy]
        parent = copy
    return root


def turn_trees(answer: dict) -> list[list[Turn]]:
    """The first turns of each tree in the file: one list per CoT try, or one for the DFS tree."""
    text_only = _text_only_messages(answer)
    if "trys" in answer:
        return [_turns_below(_chain_as_tree(t.get("chain") or []), text_only) for t in answer["trys"]]
    if "tree" in answer:
        tree = answer["tree"]
        return [_turns_below(tree.get("tree", tree), text_only)]
    raise ValueError("neither 'trys' (CoT) nor 'tree' (DFS) at the top level")


def walk(trees: list[list[Turn]]):
    """(path, attempt, turn) for every turn, in the order a replayed search asks for them."""
    def visit(turns: list[Turn], path: PathKey):
        for attempt, turn in enumerate(turns):
            yield path, attempt, turn
            yield from visit(turn.children, path + (turn.call,) if turn.call else path)

    for first_turns in trees:
        yield from visit(first_turns, ())


def index_turns(trees: list[list[Turn]]) -> dict[TurnKey, list[Turn]]:
    index: dict[TurnKey, list[Turn]] = defaultdict(list)
    for path, attempt, turn in walk(trees):
        index[(path, attempt)].append(turn)
    return dict(index)
