"""A recorded answer file against its replay: which actions and observations came back exactly, and why not.

Actions are the Action nodes with their Action Input child, in node order (CoT: the chains of the tries one
after another; DFS: the tree in preorder); an action is exact when the replay has the same name and a
byte-identical Action Input at the same position. An observation is exact when its action is and the
observation text is identical. Each difference names its kind:

- ``action_differs``, ``actions_missing``, ``actions_extra``: the replay took another path
- ``recording_truncated``: the recording holds an Action with no Action Input (the file was cut)
- ``api_answered_differently``: the recording holds two answers for the same call (the live API answered it
  differently over time); the replay serves the first one
- ``observation_not_replayable``: the recorded answer cannot be cached byte for byte (cut at 1024 characters
  beyond repair, not JSON, an answer the client made up, arguments that are not JSON); detail names why
- ``observation_differs``, ``status_differs``: anything else
- ``function_list_differs``, ``final_answer_differs``, ``win_differs``
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..protocol.evaluation import NODE_ACTION, NODE_ACTION_INPUT


@dataclass(frozen=True)
class Action:
    name: str
    arguments: str | None  # None: no Action Input node (a cut recording)
    observation: str | None
    status: int | None
    has_observation: bool


@dataclass
class Comparison:
    actions_recorded: int = 0
    actions_exact: int = 0
    observations_recorded: int = 0
    observations_exact: int = 0
    final_answer_equal: bool = False
    differences: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"actions_recorded": self.actions_recorded, "actions_exact": self.actions_exact,
                "observations_recorded": self.observations_recorded, "observations_exact": self.observations_exact,
                "final_answer_equal": self.final_answer_equal, "differences": self.differences}


def _action(node: dict, action_input: dict | None) -> Action:
    if action_input is None:
        return Action(str(node.get("description", "")), None, None, None, False)
    return Action(str(node.get("description", "")), str(action_input.get("description", "")),
                  action_input.get("observation"), action_input.get("observation_code"), "observation" in action_input)


def actions_of(answer: dict) -> list[Action]:
    found: list[Action] = []
    for attempt in answer.get("trys") or []:
        chain = attempt.get("chain") or [] if isinstance(attempt, dict) else []
        for index, node in enumerate(chain):
            if isinstance(node, dict) and node.get("node_type") == NODE_ACTION:
                following = chain[index + 1] if index + 1 < len(chain) else None
                is_input = isinstance(following, dict) and following.get("node_type") == NODE_ACTION_INPUT
                found.append(_action(node, following if is_input else None))
    tree = (answer.get("tree") or {}).get("tree")

    def visit(node: dict) -> None:
        if node.get("node_type") == NODE_ACTION:
            inputs = [c for c in node.get("children") or [] if c.get("node_type") == NODE_ACTION_INPUT]
            found.append(_action(node, inputs[0] if inputs else None))
        for child in node.get("children") or []:
            if isinstance(child, dict):
                visit(child)

    if isinstance(tree, dict):
        visit(tree)
    return found


def compare_answers(recorded: dict, replayed: dict, not_replayable: dict[tuple[str, str], str] | None = None) -> Comparison:
    """``not_replayable``: (name, arguments) -> why the cache could not hold that recorded answer."""
    not_replayable = not_replayable or {}
    ours, theirs = actions_of(replayed), actions_of(recorded)
    answers: dict[tuple[str, str | None], set] = defaultdict(set)  # by the key a cache files the call under
    for action in theirs:
        if action.has_observation:
            answers[(action.name, _cache_key(action.arguments))].add(action.observation)
    result = Comparison(actions_recorded=len(theirs),
                        observations_recorded=sum(a.has_observation for a in theirs))
    diffs = result.differences
    for index, expected in enumerate(theirs):
        if expected.arguments is None:
            diffs.append({"kind": "recording_truncated", "index": index,
                          "detail": f"Action {expected.name!r} has no Action Input node"})
        if index >= len(ours):
            continue
        got = ours[index]
        if (got.name, got.arguments) != (expected.name, expected.arguments):
            if expected.arguments is not None:
                diffs.append({"kind": "action_differs", "index": index,
                              "detail": f"recorded {expected.name!r} {_short(expected.arguments)}, "
                                        f"replayed {got.name!r} {_short(got.arguments)}"})
            continue
        result.actions_exact += 1
        if not expected.has_observation:
            continue
        if got.observation == expected.observation:
            result.observations_exact += 1
            if got.status != expected.status:
                diffs.append({"kind": "status_differs", "index": index,
                              "detail": f"recorded {expected.status}, replayed {got.status}"})
            continue
        same_call = answers[(expected.name, _cache_key(expected.arguments))]
        if len(same_call) > 1:
            kind, detail = "api_answered_differently", f"{len(same_call)} different recorded answers"
        elif (expected.name, expected.arguments) in not_replayable:
            kind, detail = "observation_not_replayable", not_replayable[(expected.name, expected.arguments)]
        else:
            kind, detail = "observation_differs", f"replayed {_short(got.observation)}"
        diffs.append({"kind": kind, "index": index, "detail": f"{expected.name}: {detail}"})
    if len(ours) < len(theirs):
        diffs.append({"kind": "actions_missing", "index": len(ours), "detail": f"{len(theirs) - len(ours)} recorded "
                                                                              "action(s) not replayed"})
    elif len(ours) > len(theirs):
        diffs.append({"kind": "actions_extra", "index": len(theirs), "detail": f"{len(ours) - len(theirs)} action(s) "
                                                                               "beyond the recording"})
    generation, our_generation = recorded.get("answer_generation") or {}, replayed.get("answer_generation") or {}
    result.final_answer_equal = generation.get("final_answer") == our_generation.get("final_answer")
    if not result.final_answer_equal:
        diffs.append({"kind": "final_answer_differs", "detail": f"recorded {_short(generation.get('final_answer'))}, "
                                                                f"replayed {_short(our_generation.get('final_answer'))}"})
    if "function" in generation and generation.get("function") != our_generation.get("function"):
        diffs.append({"kind": "function_list_differs", "detail": _function_difference(generation.get("function"),
                                                                                        our_generation.get("function"))})
    if recorded.get("win") != replayed.get("win"):
        diffs.append({"kind": "win_differs", "detail": f"recorded {recorded.get('win')}, replayed {replayed.get('win')}"})
    return result


def _cache_key(arguments: str | None) -> str | None:
    """Arguments as the server keys them (``str(json.loads(...))``, "" as {}): "{\n "a": 1}" and '{"a": 1}'
    are one call."""
    if arguments is None or arguments == "":
        return "{}" if arguments == "" else None
    try:
        return str(json.loads(arguments))
    except ValueError:
        return arguments


def _names(functions: Any) -> list:
    return [f.get("function", f).get("name") for f in functions or [] if isinstance(f, dict)]


def _function_difference(recorded: Any, replayed: Any) -> str:
    ours, theirs = _names(replayed), _names(recorded)
    if ours != theirs:
        return f"names: recorded {theirs}, replayed {ours}"
    return "same names, other descriptions or parameters"


def _short(text: Any, limit: int = 80) -> str:
    text = repr(text)
    return text if len(text) <= limit else text[:limit] + "..."
