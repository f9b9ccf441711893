"""CoT@N (upstream single_chain.py): up to N independent chains, each stopped by a final answer, a
give-up, an error, or the depth limit; the first chain that answers ends the query. An infrastructure
failure (ctx.infra_failure) ends the query at once: no further model calls are spent on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .agent import Agent, QueryContext
from .tree import Node, mark_finished


@dataclass
class CoTResult:
    roots: list[Node] = field(default_factory=list)
    last_nodes: list[Node] = field(default_factory=list)
    terminal: Node | None = None


def run_cot(agent: Agent, ctx: QueryContext, make_root, pass_at: int = 1, max_step: int = 12) -> CoTResult:
    result = CoTResult()
    for _ in range(pass_at):
        root: Node = make_root()
        node = root
        while True:
            node = agent.expand(node, ctx)
            if node.pruned or node.is_terminal:
                break
            if node.depth >= max_step:
                node.pruned = True
                break
        result.roots.append(root)
        result.last_nodes.append(node)
        if ctx.infra_failure is not None:
            break
        if node.is_terminal and not node.pruned:
            mark_finished(node)
            result.terminal = node
            break
    return result
