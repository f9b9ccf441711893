"""What every method's answer file shares: node chains and the answer_generation block (upstream raw format,
toolbench_adapter/answers/write.py). Each method builds its own file from these (cot.py, dfs.py)."""

from __future__ import annotations

from toolbench_adapter.answers.write import answer_generation

from .agent import QueryContext
from .tree import Node


def chain(node: Node) -> list[dict]:
    return [n.to_json() for n in node.path_from_root()]


def generation(ctx: QueryContext, chosen: Node | None, valid: bool, final_answer: str,
               train_messages_when_invalid: list | None, finish_type: str | None = None) -> dict:
    return answer_generation(
        valid=valid, final_answer=final_answer, functions=ctx.toolset.functions,
        query_count=ctx.budget.query_count, total_tokens=ctx.budget.total_tokens,
        train_messages=chosen.train_messages() if valid and chosen is not None else train_messages_when_invalid,
        query=ctx.toolset.query.query, finish_type=finish_type)
