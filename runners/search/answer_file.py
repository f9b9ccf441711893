"""Search results -> upstream answer-file dicts (the format upstream converters and evaluators read)."""

from __future__ import annotations

import random

from toolbench_adapter.answers.write import answer_generation, cot_answer, dfs_answer

from .agent import QueryContext
from .chain import CoTResult
from .config import RunConfig
from .dfs import DFSResult
from .tree import Node


def _chain(node: Node) -> list[dict]:
    return [n.to_json() for n in node.path_from_root()]


def _generation(ctx: QueryContext, chosen: Node | None, valid: bool, final_answer: str,
                train_messages_when_invalid: list | None, finish_type: str | None = None) -> dict:
    return answer_generation(
        valid=valid, final_answer=final_answer, functions=ctx.toolset.functions,
        query_count=ctx.budget.query_count, total_tokens=ctx.budget.total_tokens,
        train_messages=chosen.train_messages() if valid and chosen is not None else train_messages_when_invalid,
        query=ctx.toolset.query.query, finish_type=finish_type)


def cot_file(result: CoTResult, ctx: QueryContext, cfg: RunConfig) -> dict:
    terminal = result.terminal
    valid = terminal is not None
    trys = [{"chain": _chain(last), "win": bool(last.is_terminal and not last.pruned)} for last in result.last_nodes]
    generation = _generation(ctx, terminal, valid, terminal.description if valid else "", [])
    return cot_answer(win=valid, trys=trys, compare_candidates=[_chain(terminal)] if valid else [],
                      max_step=cfg.max_step, pass_at=cfg.method_parts()[1],
                      generation=generation)


def dfs_file(result: DFSResult, ctx: QueryContext, cfg: RunConfig, rng: random.Random) -> dict:
    root = result.root
    terminals = [n for n in result.terminal_nodes if not n.pruned]
    chosen, finish_type = None, "give_answer"
    if terminals:
        chosen = terminals[0]
    elif result.give_up_nodes and not cfg.compat_settings().dfs_no_give_up_answer:
        # upstream falls back to a random give-up node (valid, finish_type give_up)
        chosen = result.give_up_nodes[rng.randrange(len(result.give_up_nodes))]
        finish_type = "give_up"
    valid = chosen is not None
    nodes = list(root.iter_tree())
    generation = _generation(ctx, chosen, valid, chosen.description if valid else "", None, finish_type)
    return dfs_answer(
        win=bool(terminals), tree=root.to_json(with_children=True), size=len(nodes),
        max_length=max(n.depth for n in nodes) + 1, compare_candidates=[_chain(n) for n in terminals],
        max_step=cfg.max_step, width=cfg.method_parts()[1], max_query_count=cfg.max_query_count,
        generation=generation)


