"""Which DFSDT backtracking rule a recorded tree was searched with (reference §7.3).

StableToolBench (and ToolBench's released DFS.py): a leaf that is pruned or at the depth limit and is not a
give-up sends the search back one level: its parent asks for its next child. Some of ToolBench's own example
answers (toolenv data example, G1_answer/69_ChatGPT_DFS_woFilter_w2.json) were searched with a rule where
such a dead end backtracks two levels, like a give-up: its parent never gets a child after it. The recorded
tree tells which. The search is re-run on the tree's shape (the children each expanded node got, in order,
and each leaf's depth, pruned flag and status code) under each rule; a rule fits when it asks for exactly
the recorded children, no more and no fewer.
"""

from __future__ import annotations

from toolbench_adapter.protocol import env as E

from ..models.recorded_turns import Turn, turn_trees, walk

STB_BACK_LENGTH = 1  # StableToolBench: a dead end backtracks one level
TWO_LEVEL_BACK_LENGTH = 2  # the older ToolBench rule: two levels, like a give-up
_FOUND, _OUT_OF_BUDGET = 10000, 100000  # as runners/search/dfs.py


class _Mismatch(Exception):
    """The rule asks for a child the recording lacks, or stops where the recording went on."""


def fits(root: dict, first_turns: list[Turn], dead_end_back_length: int, width: int = 2, max_step: int = 12,
         max_query_count: int = 200) -> bool:
    """Does DFSDT with this dead-end rule, fed the recorded turns, grow exactly the recorded tree?"""
    total = sum(1 for _ in walk([first_turns]))
    calls = visited = 0

    def dfs(node: dict, turns: list[Turn]) -> int:
        nonlocal calls, visited
        code = node.get("observation_code")
        if int(node.get("depth") or 0) >= max_step or node.get("pruned") or code == E.STATUS_FINAL_ANSWER:
            if turns:
                raise _Mismatch
            if code == E.STATUS_FINAL_ANSWER:
                return _FOUND
            return 2 if code == E.STATUS_GIVE_UP else dead_end_back_length
        for attempt in range(width):
            calls += 1
            if calls >= max_query_count:  # this reply is discarded: no child
                return _OUT_OF_BUDGET
            if attempt >= len(turns) or turns[attempt].last is None:
                raise _Mismatch
            visited += 1
            r = dfs(turns[attempt].last, turns[attempt].children)
            if r in (_FOUND, _OUT_OF_BUDGET):
                return r
            if r > 1:
                return r - 1
        return 1

    try:
        dfs(root, first_turns)
    except _Mismatch:
        return False
    return visited == total


def dead_end_back_length(answer: dict) -> int | None:
    """TWO_LEVEL_BACK_LENGTH when only the older rule reproduces this DFS recording, STB_BACK_LENGTH when
    StableToolBench's does, None when the file is not a DFS tree or neither rule fits (replayed as StableToolBench)."""
    tree = answer.get("tree")
    if not isinstance(tree, dict):
        return None
    root = tree.get("tree", tree)
    args = answer.get("forward_args") or {}
    limits = {"width": int(args.get("tree_beam_size") or 2), "max_step": int(args.get("single_chain_max_step") or 12),
              "max_query_count": int(args.get("max_query_count") or 200)}
    try:
        (first_turns,) = turn_trees(answer)
    except (ValueError, TypeError, AttributeError):
        return None
    for back_length in (STB_BACK_LENGTH, TWO_LEVEL_BACK_LENGTH):
        if fits(root, first_turns, back_length, **limits):
            return back_length
    return None


def _has_give_up_leaf(node: dict) -> bool:
    if node.get("observation_code") == E.STATUS_GIVE_UP and not node.get("children"):
        return True
    return any(_has_give_up_leaf(child) for child in node.get("children") or [])


def drops_give_up_answer(answer: dict) -> bool:
    """A lost DFS search with give-up leaves whose answer is none (valid_data false, final_answer ""): the
    older ToolBench; StableToolBench adopts a give-up node (finish_type give_up)."""
    tree = answer.get("tree")
    generation = answer.get("answer_generation")
    if not isinstance(tree, dict) or not isinstance(generation, dict) or answer.get("win"):
        return False
    return (generation.get("valid_data") is False and not generation.get("final_answer")
            and _has_give_up_leaf(tree.get("tree", tree)))


def compat_flags_for(answer: dict) -> dict[str, bool]:
    """The compat flags (toolbench_adapter/compat.py) a recording needs to be replayed exactly; {} for
    StableToolBench's search."""
    flags = {}
    if dead_end_back_length(answer) == TWO_LEVEL_BACK_LENGTH:
        flags["dfs_dead_end_backtracks_two"] = True
    if drops_give_up_answer(answer):
        flags["dfs_no_give_up_answer"] = True
    return flags
