"""CoT@N (upstream single_chain.py): up to N independent chains, each stopped by a final answer, a
give-up, an error, or the depth limit; the first chain that answers ends the query. An infrastructure
failure (ctx.infra_failure) ends the query at once: no further model calls are spent on it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from toolbench_adapter.answers.write import cot_answer

from .agent import Agent, QueryContext
from .answer_file import chain, generation
from .methods import SearchLimits, suffix_number
from .tree import Node, mark_finished


@dataclass
class CoTResult:
    roots: list[Node] = field(default_factory=list)
    last_nodes: list[Node] = field(default_factory=list)
    terminal: Node | None = None


def run_cot(agent: Agent, ctx: QueryContext, make_root, pass_at: int = 1, max_step: int = 12,
            max_query_count: int | None = None) -> CoTResult:
    """``max_query_count``: the query's model-call cap for re-asks (--on-invalid reask:N), as DFSDT's: past it a
    turn's invalid reply goes on as observe would have it (a chain alone makes at most pass_at x max_step calls)."""
    result = CoTResult()
    ctx.budget.call_cap = max_query_count
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


def cot_file(result: CoTResult, ctx: QueryContext, max_step: int, pass_at: int) -> dict:
    """The CoT answer file (upstream single_chain): every try's chain, the answering one as the candidate."""
    terminal = result.terminal
    valid = terminal is not None
    trys = [{"chain": chain(last), "win": bool(last.is_terminal and not last.pruned)} for last in result.last_nodes]
    answer = generation(ctx, terminal, valid, terminal.description if valid else "", [])
    return cot_answer(win=valid, trys=trys, compare_candidates=[chain(terminal)] if valid else [],
                      max_step=max_step, pass_at=pass_at, generation=answer)


class CoT:
    """CoT@N: up to N chains, the first that answers ends the query (registered as "CoT": search/methods.py)."""

    family, form, example = "CoT", "CoT@N", "CoT@1"
    PATTERN = re.compile(r"CoT@(\d+)")

    def __init__(self, pass_at: int = 1, name: str | None = None):
        self.pass_at = pass_at
        self.name = name or f"CoT@{pass_at}"

    @classmethod
    def parse(cls, name: str) -> CoT | None:
        match = cls.PATTERN.fullmatch(name)
        return cls(suffix_number(name, cls, match.group(1)), name) if match else None

    def search(self, agent: Agent, ctx: QueryContext, new_root: Callable[[], Node], limits: SearchLimits) -> dict:
        result = run_cot(agent, ctx, new_root, pass_at=self.pass_at, max_step=limits.max_step,
                         max_query_count=limits.max_query_count)
        return cot_file(result, ctx, limits.max_step, self.pass_at)
