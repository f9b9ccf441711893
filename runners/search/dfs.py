"""DFSDT without filter (upstream DFS.py, method DFS_woFilter_wN).

Each node is expanded at most ``width`` times; a later sibling is asked for with the diversity prompt
listing earlier attempts. A final answer ends the search; a give-up backtracks two levels; a pruned or
depth-limited leaf backtracks ``dead_end_back_length`` levels (1 as StableToolBench; 2 with the compat flag
dfs_dead_end_backtracks_two, an older ToolBench search); the search stops after ``max_query_count`` model calls, and at once at
an infrastructure failure (ctx.infra_failure: the failed node is pruned, no further model calls).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from toolbench_adapter.answers.write import dfs_answer
from toolbench_adapter.messages import diversity_message
from toolbench_adapter.protocol import env as E

from .agent import Agent, QueryContext
from .answer_file import chain, generation
from .methods import SearchLimits, suffix_number
from .tree import ACTION_INPUT, Node, mark_finished

FOUND = 10000  # upstream's return value once a terminal node exists
OUT_OF_BUDGET = 100000  # upstream's return value once the query budget is spent


@dataclass
class DFSResult:
    root: Node | None = None
    terminal_nodes: list[Node] = field(default_factory=list)
    give_up_nodes: list[Node] = field(default_factory=list)
    out_of_budget: bool = False


def run_dfs(agent: Agent, ctx: QueryContext, root: Node, width: int = 2, max_step: int = 12,
            max_query_count: int = 200, dead_end_back_length: int = 1) -> DFSResult:
    result = DFSResult(root=root)
    ctx.budget.call_cap = max_query_count  # --on-invalid reask:N asks no more once the cap is reached

    def previous_candidates(node: Node) -> list[dict]:
        candidates = []
        for child in node.children:
            probe = child
            while probe.node_type != ACTION_INPUT and probe.children:
                probe = probe.children[0]
            if probe.node_type == ACTION_INPUT and probe.father is not None:
                candidates.append({"name": probe.father.description, "arguments": probe.description,
                                   "function_output": probe.observation, "mento-carlo-action-value": 0.0})
        return candidates

    def dfs(node: Node) -> int:
        node.expand_num = ctx.budget.expand_counter
        ctx.budget.expand_counter += 1
        if node.depth >= max_step or node.pruned or node.is_terminal:
            if node.is_terminal:
                mark_finished(node)
                result.terminal_nodes.append(node)
                return 2
            node.pruned = True
            if node.observation_code == E.STATUS_GIVE_UP:
                result.give_up_nodes.append(node)
                return 2
            return dead_end_back_length
        for _ in range(width):
            diversity = None
            if node.children:
                candidates = previous_candidates(node)
                if candidates:
                    diversity = diversity_message(candidates, node.observation or None)
                    node.messages.append(diversity)  # stays in this branch's history, as upstream
            completion = agent.generate(node, ctx)
            if ctx.budget.query_count >= max_query_count:  # upstream discards the reply that hits the cap
                result.out_of_budget = True
                return OUT_OF_BUDGET
            last = agent.grow(node, ctx, completion)
            if diversity is not None:
                diversity["valid"] = False  # OpenAI-style requests skip it from now on
            r = dfs(last)
            if result.terminal_nodes or ctx.infra_failure is not None:
                return FOUND
            if r > 1:
                return r - 1
        return 1

    try:
        dfs(root)
    finally:
        dfs = None  # noqa: F841 (it calls itself: a reference cycle, freed now rather than by a full collection)
    return result


def dfs_file(result: DFSResult, ctx: QueryContext, rng: random.Random, *, max_step: int, width: int,
             max_query_count: int, no_give_up_answer: bool = False) -> dict:
    """The DFSDT answer file (upstream DFS.py): the whole tree, the answering leaves as candidates; with no
    answer, upstream falls back to a random give-up node (valid, finish_type give_up) unless
    ``no_give_up_answer`` (compat flag dfs_no_give_up_answer, an older ToolBench)."""
    root = result.root
    terminals = [n for n in result.terminal_nodes if not n.pruned]
    chosen, finish_type = None, "give_answer"
    if terminals:
        chosen = terminals[0]
    elif result.give_up_nodes and not no_give_up_answer:
        chosen = result.give_up_nodes[rng.randrange(len(result.give_up_nodes))]
        finish_type = "give_up"
    valid = chosen is not None
    nodes = list(root.iter_tree())
    answer = generation(ctx, chosen, valid, chosen.description if valid else "", None, finish_type)
    return dfs_answer(
        win=bool(terminals), tree=root.to_json(with_children=True), size=len(nodes),
        max_length=max(n.depth for n in nodes) + 1, compare_candidates=[chain(n) for n in terminals],
        max_step=max_step, width=width, max_query_count=max_query_count, generation=answer)


class DFSWoFilter:
    """DFS_woFilter_wN: DFSDT, each node expanded at most N times (registered as "DFS_woFilter": methods.py)."""

    family, form, example = "DFS_woFilter", "DFS_woFilter_wN", "DFS_woFilter_w2"
    PATTERN = re.compile(r"DFS_woFilter_w(\d+)")

    def __init__(self, width: int = 2, name: str | None = None):
        self.width = width
        self.name = name or f"DFS_woFilter_w{width}"

    @classmethod
    def parse(cls, name: str) -> DFSWoFilter | None:
        match = cls.PATTERN.fullmatch(name)
        return cls(suffix_number(name, cls, match.group(1)), name) if match else None

    def search(self, agent: Agent, ctx: QueryContext, new_root: Callable[[], Node], limits: SearchLimits) -> dict:
        compat = limits.compat
        result = run_dfs(agent, ctx, new_root(), width=self.width, max_step=limits.max_step,
                         max_query_count=limits.max_query_count,
                         dead_end_back_length=2 if compat is not None and compat.dfs_dead_end_backtracks_two else 1)
        return dfs_file(result, ctx, random.Random(limits.seed), max_step=limits.max_step, width=self.width,
                        max_query_count=limits.max_query_count,
                        no_give_up_answer=bool(compat is not None and compat.dfs_no_give_up_answer))
