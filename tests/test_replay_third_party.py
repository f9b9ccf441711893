"""The development corpus: 124 answer files of a public ToolBench fork (ToolLLaMA-2 and ChatGPT runs, CoT@1,
CoT@3 and DFS_woFilter_w2, ToolBench's own queries, the fork's folder layout) replayed with `tba replay`.
Per file: every recorded action comes back (same name, byte-identical Action Input, node order), or the file
is refused with a named reason. Observations that differ are explained by a named kind."""

from __future__ import annotations

import json

import pytest

from runners.cli import main as tba
from tests.conftest import FIXTURES_ROOT, STB_ROOT, _need

EXPLAINED = {"api_answered_differently", "observation_not_replayable"}


@pytest.fixture(scope="module")
def corpus():
    return _need(FIXTURES_ROOT / "third_party_runs", "the third-party answer files")


@pytest.mark.parametrize("source", ["cold_start", "stabletoolbench"])
def test_every_third_party_file_is_replayed_or_refused_with_a_reason(corpus, tmp_path, monkeypatch, source):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    args = ["replay", str(corpus), "--name", "third_party", "--out-root", str(tmp_path), "--json"]
    if source == "stabletoolbench":
        args += ["--stb-root", str(_need(STB_ROOT / "solvable_queries", "StableToolBench data").parent)]
    status = tba(args)
    lines = [json.loads(line) for line in (tmp_path / "third_party" / "replay.jsonl").read_text().splitlines()]
    assert len(lines) == len(list(corpus.rglob("*.json"))) == 124
    for line in lines:
        if line["reason"] is None:
            assert line["actions_exact"] == line["actions_recorded"], (line["source"], line["differences"])
            kinds = {d["kind"] for d in line["differences"]}
            assert not kinds & {"action_differs", "actions_missing", "actions_extra"}, line["source"]
            assert line["observations_recorded"] - line["observations_exact"] == \
                sum(d["kind"] in EXPLAINED for d in line["differences"]), (line["source"], line["differences"])
            assert line["final_answer_equal"] is True and line["answer"].endswith(".json")
        else:  # refused: a named reason and a message, no answer file
            assert line["answer"] is None and line["reason"] and line["message"], line["source"]
    replayed = [line for line in lines if line["reason"] is None]
    # the same query and method recorded by several runs (45371 CoT@3 three times): one answer file each
    assert len({line["answer"] for line in replayed}) == len(replayed)
    assert len(replayed) == 124 and sum(line["actions_exact"] for line in replayed) == 996
    # only ToolBench's own G1_answer/69 was searched by the older DFSDT (runners/replay/search_rule.py); the
    # other 123 files keep StableToolBench's rule, unflagged
    older = [line for line in lines if line["compat_flags"]]
    assert [line["source"].rsplit("/", 2)[-2:] for line in older] == [["G1_answer", "69_ChatGPT_DFS_woFilter_w2.json"]]
    assert older[0]["compat_flags"] == {"dfs_dead_end_backtracks_two": True, "dfs_no_give_up_answer": True}
    assert status == 0
