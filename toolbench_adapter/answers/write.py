"""Answer files in the upstream raw format (§8 of the reference): what upstream tools read.

Built from plain data (node JSON, message lists), so this module knows nothing about how a run went;
runners/ assembles the pieces and writes them with fileio.write_json_atomic (atomic, fsynced)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def answer_generation(*, valid: bool, final_answer: str, functions: list[dict], query_count: int,
                      total_tokens: int, train_messages: list | None, query: str,
                      finish_type: str | None = None) -> dict:
    """Key order as upstream writes it; DFS files carry finish_type and omit train_messages when invalid."""
    data: dict[str, Any] = {"valid_data": valid, "final_answer": final_answer}
    if finish_type is not None:
        data["finish_type"] = finish_type
    data["function"] = functions
    data["query_count"] = query_count
    data["total_tokens"] = total_tokens
    if train_messages is not None:
        data["train_messages"] = train_messages
    data["chain"] = []
    data["query"] = query
    return data


def cot_answer(*, win: bool, trys: list[dict], compare_candidates: list, max_step: int, pass_at: int,
               generation: dict) -> dict:
    return {
        "win": win,
        "try_count": len(trys),
        "trys": trys,
        "compare_candidates": compare_candidates,
        "forward_args": {"single_chain_max_step": max_step, "pass_at": pass_at, "answer": 1},
        "answer_generation": generation,
    }


def dfs_answer(*, win: bool, tree: dict, size: int, max_length: int, compare_candidates: list, max_step: int,
               width: int, max_query_count: int, generation: dict) -> dict:
    return {
        "win": win,
        "tree": {"size": size, "max_length": max_length, "tree": tree},
        "forward_args": {"single_chain_max_step": max_step, "tree_beam_size": width,
                         "max_query_count": max_query_count, "answer": 1, "with_filter": False},
        "compare_candidates": compare_candidates,
        "answer_generation": generation,
    }


def answer_path(out_dir: str | Path, group: str, query_id: int, method: str) -> Path:
    return Path(out_dir) / group / f"{query_id}_{method}.json"


