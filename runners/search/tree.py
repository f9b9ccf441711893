"""The search tree both methods grow: nodes as upstream's Tree.py models them (Thought / Action /
Action Input), serialised in the upstream node JSON, and the train_messages walk."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

THOUGHT, ACTION, ACTION_INPUT = "Thought", "Action", "Action Input"


@dataclass(eq=False)
class Node:
    node_type: str
    description: str = ""
    father: Node | None = None
    children: list[Node] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)  # conversation up to and including this node
    env: Any = None  # ToolEnv state at this node
    observation: str = ""
    observation_code: int | None = None
    pruned: bool = False
    is_terminal: bool = False
    finished: bool = False
    expand_num: int = 0

    @classmethod
    def root(cls, messages: list[dict], env: Any) -> Node:
        return cls(node_type=ACTION_INPUT, messages=list(messages), env=env)

    def add_child(self, node_type: str, description: str, messages: list[dict] | None = None) -> Node:
        child = Node(node_type=node_type, description=description, father=self,
                     messages=list(self.messages if messages is None else messages), env=self.env)
        self.children.append(child)
        return child

    @property
    def depth(self) -> int:
        depth, node = 0, self
        while node.father is not None:
            depth, node = depth + 1, node.father
        return depth

    def path_from_root(self) -> list[Node]:
        """Nodes from the first child of the root down to this node (root excluded)."""
        path, node = [], self
        while node.father is not None:
            path.append(node)
            node = node.father
        return path[::-1]

    def calls_so_far(self) -> list[list[str]]:
        """(function name, raw arguments) of every call on the branch down to this node."""
        return [[n.father.description, n.description] for n in self.path_from_root()
                if n.node_type == ACTION_INPUT and n.father is not None and n.father.node_type == ACTION]

    def to_json(self, with_children: bool = False) -> dict:
        """Upstream node JSON (key order as in answer files). is_terminal is written false, as upstream
        always writes it (a known upstream bug kept for format compatibility; win says the truth)."""
        data: dict[str, Any] = {
            "is_terminal": False,
            "pruned": self.pruned,
            "finished": self.finished,
            "depth": self.depth,
            "node_type": self.node_type,
            "description": self.description,
            "Elo": 1000.0,
        }
        if self.observation:
            data["observation"] = self.observation
        if self.observation_code is not None:
            data["observation_code"] = self.observation_code
        data["child_count"] = len(self.children)
        data["expand_num"] = self.expand_num
        if self.node_type == ACTION_INPUT:
            data["io_state"] = {}
        if with_children:
            data["children"] = [child.to_json(with_children=True) for child in self.children]
        return data

    def iter_tree(self):
        yield self
        for child in self.children:
            yield from child.iter_tree()

    def train_messages(self) -> list[list[dict]]:
        """Message lists from the root to this node, upstream's get_train_messages_from_this_node walk:
        Action Input nodes give their messages cut after the last assistant message; Thought nodes count
        only when they end with an assistant message; each list keeps only its last invalid message."""
        lists: list[list[dict]] = []
        node: Node | None = self
        while node is not None:
            messages = list(node.messages)
            if node.node_type == ACTION_INPUT:
                while messages and messages[-1]["role"] != "assistant":
                    messages.pop()
            elif node.node_type == THOUGHT:
                while messages and messages[-1]["role"] == "user":
                    messages.pop()
                if not messages or messages[-1]["role"] != "assistant":
                    messages = []
            else:
                messages = []
            if messages:
                lists.insert(0, _keep_last_invalid(messages))
            node = node.father
        return lists


def _keep_last_invalid(messages: list[dict]) -> list[dict]:
    invalid = [i for i, m in enumerate(messages) if m.get("valid") is False]
    drop = set(invalid[:-1])
    return [m for i, m in enumerate(messages) if i not in drop]


def mark_finished(node: Node) -> None:
    """Flag the branch of a final answer (cosmetic in answer files; no evaluator reads it)."""
    for n in node.path_from_root():
        n.finished = True


def release(roots: list[Node]) -> None:
    """Unlink the trees of a query that has been written. A node and its children point at each other: cycles
    that only the garbage collector frees, so each ended query's tree (its prompts too) stayed in memory until
    a full collection, and that collection walked every such tree: 40-60 ms in one pass at concurrency 32
    (benchmarks/bench_runner.py). Unlinked, reference counting frees them as the query ends."""
    stack = list(roots)
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        node.children = []
        node.father = None
