"""Which DFSDT rule a recording was searched with, and `tba replay` choosing it.

ToolBench's own example answers were made by two search versions: most with StableToolBench's rule (a
pruned or depth-limited leaf backtracks one level), some (G1_answer/57, G1_answer/69, G3_answer/8) with an
older rule where it backtracks two, and whose lost searches keep no give-up answer."""

from __future__ import annotations

import json

import pytest

from runners.cli import main as tba
from runners.config import RunConfig
from runners.models.recorded_turns import turn_trees
from runners.replay.search_rule import compat_flags_for, dead_end_back_length, fits
from tests.conftest import FIXTURES_ROOT, STB_ROOT, TB_ROOT, _need
from toolbench_adapter.compat import Compat
from toolbench_adapter.errors import InputError

OLDER_TOOLBENCH = {"G1_answer/57", "G1_answer/69", "G3_answer/8"}
G1_69 = "toolenv_data_example/answer/G1_answer/69_ChatGPT_DFS_woFilter_w2.json"


def _node(depth, kind="Action Input", children=(), code=0, pruned=False, description="{}"):
    return {"node_type": kind, "description": description, "depth": depth, "observation_code": code,
            "pruned": pruned, "expand_num": 0, "children": list(children)}


def _call(depth, name, children=(), **leaf):
    """A call turn: Action (name) -> Action Input at depth + 1."""
    return _node(depth, "Action", [_node(depth + 1, children=children, **leaf)], code=None, description=name)


def _answer(root_children, max_step=4):
    return {"win": False, "tree": {"tree": _node(0, children=root_children, code=None, description="")},
            "forward_args": {"single_chain_max_step": max_step, "tree_beam_size": 2, "max_query_count": 200},
            "answer_generation": {"valid_data": True, "final_answer": "x"}}


def _leaf_then(sibling: bool):
    """Root -> a, d (depth 2) -> each a leaf at the depth limit (4); a second leaf after it only if `sibling`."""
    def leaves(first, second):
        return [_call(3, first, pruned=True)] + ([_call(3, second, pruned=True)] if sibling else [])
    return _answer([_call(1, "a", leaves("b", "c")), _call(1, "d", leaves("e", "f"))])


def test_a_dead_end_with_no_sibling_after_it_needs_the_two_level_rule():
    one_level, two_level = _leaf_then(sibling=True), _leaf_then(sibling=False)
    assert dead_end_back_length(one_level) == 1 and compat_flags_for(one_level) == {}
    assert dead_end_back_length(two_level) == 2
    assert compat_flags_for(two_level) == {"dfs_dead_end_backtracks_two": True}
    (turns,) = turn_trees(two_level)
    assert not fits(two_level["tree"]["tree"], turns, 1) and fits(two_level["tree"]["tree"], turns, 2)


def test_a_tree_neither_rule_grows_is_left_to_stabletoolbench():
    answer = _leaf_then(sibling=True)
    answer["tree"]["tree"]["children"].append(_call(1, "g", pruned=True))  # a third child at width 2
    assert dead_end_back_length(answer) is None and compat_flags_for(answer) == {}


def test_a_lost_search_without_its_give_up_answer_is_named():
    answer = _leaf_then(sibling=True)
    answer["tree"]["tree"]["children"][1]["children"][0]["children"][1] = _call(3, "Finish", code=4, pruned=True)
    assert dead_end_back_length(answer) == 1  # the give-up is the last child: both rules agree on the shape
    answer["answer_generation"] = {"valid_data": False, "final_answer": "", "finish_type": "give_answer"}
    assert compat_flags_for(answer) == {"dfs_no_give_up_answer": True}
    answer["answer_generation"] = {"valid_data": True, "final_answer": "{}", "finish_type": "give_up"}
    assert compat_flags_for(answer) == {}


def test_every_recorded_dfs_tree_fits_one_rule_and_only_older_toolbench_needs_the_other():
    roots = [_need(FIXTURES_ROOT / "third_party_runs", "the third-party answer files"),
             _need(STB_ROOT / "data_example", "StableToolBench data"), _need(TB_ROOT / "data_example", "ToolBench data")]
    two_level, one_level = set(), 0
    for root in roots:
        for path in sorted(root.rglob("*DFS*.json")):
            answer = json.loads(path.read_text())
            rule = dead_end_back_length(answer)
            assert rule in (1, 2), path
            if rule == 2:
                two_level.add(f"{path.parent.name}/{path.name.split('_')[0]}")
            one_level += rule == 1
    assert two_level == OLDER_TOOLBENCH and one_level == 60  # 45 third-party, 3 StableToolBench, 12 ToolBench


def test_tba_replay_picks_the_older_rule_for_g1_69_and_reproduces_every_node(tmp_path, monkeypatch):
    """Before the rule was detected this file stopped with a replay_gap after 6 of its 24 actions."""
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    source = _need(FIXTURES_ROOT / "third_party_runs", "the third-party answer files") / \
        "EduardoTrevino__Toolbench-qaq" / G1_69
    assert tba(["replay", str(source), "--name", "g1", "--out-root", str(tmp_path)]) == 0
    (line,) = [json.loads(t) for t in (tmp_path / "g1" / "replay.jsonl").read_text().splitlines()]
    assert line["reason"] is None and line["differences"] == []
    assert line["compat_flags"] == {"dfs_dead_end_backtracks_two": True, "dfs_no_give_up_answer": True}
    assert line["actions_exact"] == line["actions_recorded"] == 24 and line["final_answer_equal"] is True
    recorded, ours = json.loads(source.read_text()), json.loads(open(line["answer"]).read())

    def nodes(node):
        yield {k: node.get(k) for k in ("node_type", "description", "depth", "pruned", "expand_num",
                                        "child_count", "observation", "observation_code")}
        for child in node.get("children", []):
            yield from nodes(child)

    assert list(nodes(ours["tree"]["tree"])) == list(nodes(recorded["tree"]["tree"]))  # 66 nodes, expand order too
    assert ours["answer_generation"]["valid_data"] is False and ours["answer_generation"]["final_answer"] == ""
    manifest = json.loads((tmp_path / "g1" / "DFS_woFilter_w2" / "manifest.json").read_text())
    assert manifest["compat"]["dfs_dead_end_backtracks_two"] is True
    assert manifest["config"]["compat_flags"] == line["compat_flags"]


def test_compat_flags_are_checked_and_old_manifests_still_resume():
    with pytest.raises(InputError, match="compat flag"):
        RunConfig(compat_flags={"no_such_flag": True}).validate()
    with pytest.raises(InputError, match="compat flag"):
        RunConfig(compat_flags={"dfs_dead_end_backtracks_two": "yes"}).validate()
    with pytest.raises(ValueError, match="unknown compat flag"):
        Compat.from_mode("stb", no_such_flag=True)
    assert not Compat.from_mode("stb").dfs_dead_end_backtracks_two
    assert not Compat.from_mode("strict").dfs_no_give_up_answer
    old_manifest_config = {k: v for k, v in RunConfig().as_dict().items() if k != "compat_flags"}
    assert RunConfig.defining_of(old_manifest_config) == RunConfig().defining()
