"""One hostile answer file among good ones (JSON nested 200,000 deep, '..' in a function or tool name, nodes
and messages of the wrong shape, a chain too long to walk): `tba cache build`, `tba convert` and
`tba replay` refuse that file by name, field and reason, process the others, and exit 3 with a count.
Nothing is ever written outside --out. The good files are generated here, so these tests need no ../shared;
one test also mixes in released third-party files when ../shared is there."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from runners.cli import main as tba
from tests.conftest import FIXTURES_ROOT, _need
from toolbench_adapter.answers.convert import convert_folder
from toolbench_adapter.answers.read import UnusableAnswer, load_answer, read_recorded
from toolbench_adapter.protocol import env as E
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.toolset import build_toolset

GROUP = "G1_instruction"
TOOLS = [{"category_name": "Weather", "tool_name": "Sky Tool", "api_name": "Now", "required_parameters": [],
          "optional_parameters": []}]
FUNCTIONS = build_toolset(Query(query_id=1, group=GROUP, query="q", api_list=TOOLS)).functions
DEPTH = 200_000


def node(kind, description, observation=None, code=None):
    data = {"node_type": kind, "description": description, "children": []}
    if observation is not None:
        data.update(observation=observation, observation_code=code)
    return data


def good_answer(query_id: int, city: str) -> dict:
    """A valid ToolBench-style CoT@1 answer: one call, then Finish (old function_call messages)."""
    observation = json.dumps({"error": "", "response": f"cold in {city}"})
    arguments = json.dumps({"city": city})
    finish = json.dumps({"return_type": "give_answer", "final_answer": f"cold in {city}"})
    chain = [node("Thought", "look"), node("Action", "now_for_sky_tool"),
             node("Action Input", arguments, observation, 0),
             node("Thought", "done"), node("Action", "Finish"), node("Action Input", finish, E.FINISH_SUCCESS, 3)]
    query = f"weather in {city} (query {query_id})?"
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": query},
                {"role": "assistant", "content": "look",
                 "function_call": {"name": "now_for_sky_tool", "arguments": arguments}},
                {"role": "function", "name": "now_for_sky_tool", "content": observation},
                {"role": "assistant", "content": "done", "function_call": {"name": "Finish", "arguments": finish}}]
    return {"win": True, "try_count": 1, "trys": [{"chain": chain}], "compare_candidates": [],
            "forward_args": {"single_chain_max_step": 12, "pass_at": 1, "answer": 1},
            "answer_generation": {"valid_data": True, "final_answer": finish, "function": copy.deepcopy(FUNCTIONS),
                                  "query_count": 2, "total_tokens": 10, "train_messages": [messages], "chain": [],
                                  "query": query}}


def invalid_answer(query_id: int, tries: int = 5) -> dict:
    """An invalid CoT answer: conversion falls back to a random try (the converter's RNG)."""
    data = good_answer(query_id, f"city{query_id}")
    data["trys"] = [{"chain": [node("Action", f"tool_{i}"), node("Action Input", "{}", f"obs {i}", 0)]}
                    for i in range(tries)]
    data["win"] = False
    data["answer_generation"].update(valid_data=False, final_answer="", train_messages=[])
    return data


def write(folder: Path, name: str, data) -> Path:
    path = folder / GROUP / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def hostile_files(folder: Path) -> dict[str, str]:
    """File name -> the reason it must be refused with."""
    evil_tool = good_answer(11, "Rome")
    for function in evil_tool["answer_generation"]["function"]:
        if function["name"] != "Finish":
            function["description"] = 'This is the subfunction for tool "../../../evil", you can use this tool.'
    evil_name = good_answer(12, "Bern")
    evil_name["answer_generation"]["function"][0]["name"] = "now_for_../../../evil"
    bad_try = good_answer(13, "Kiev")
    bad_try["trys"] = [1]
    bad_call = good_answer(14, "Riga")
    bad_call["answer_generation"]["train_messages"][0][2]["function_call"] = "now_for_sky_tool"
    bad_limit = good_answer(15, "Oslo")
    bad_limit["forward_args"]["single_chain_max_step"] = "twelve"
    files = {"10_CoT@1.json": ("[" * DEPTH + "]" * DEPTH, "too_deeply_nested"),
             "11_CoT@1.json": (evil_tool, "unsafe_function_name"),
             "12_CoT@1.json": (evil_name, "unsafe_function_name"),
             "13_CoT@1.json": (bad_try, "malformed"),
             "14_CoT@1.json": (bad_call, "malformed"),
             "15_CoT@1.json": (bad_limit, "malformed")}
    for name, (data, _) in files.items():
        write(folder, name, data)
    return {name: reason for name, (_, reason) in files.items()}


@pytest.fixture(autouse=True)
def cold_start(monkeypatch):
    monkeypatch.delenv("TBA_STB_ROOT", raising=False)  # the queries come from the answer files


def test_json_raises_recursion_error_not_value_error_on_deep_nesting(tmp_path):
    """Why the readers catch RecursionError: json.loads gives no ValueError for it."""
    with pytest.raises(RecursionError):
        json.loads("[" * DEPTH + "]" * DEPTH)
    path = write(tmp_path, "10_CoT@1.json", "{\"a\": " * DEPTH + "1" + "}" * DEPTH)
    for reader in (read_recorded, load_answer):
        with pytest.raises(UnusableAnswer) as err:
            reader(path)
        assert err.value.reason == "too_deeply_nested" and err.value.path == str(path)
        assert f"nests {DEPTH} levels deep" in err.value.problem and err.value.field == f"line 1 column {6 * (DEPTH - 1) + 1}"


def test_shape_problems_name_the_field(tmp_path):
    bad = good_answer(3, "Oslo")
    bad["answer_generation"]["train_messages"][0][2]["function_call"] = ["now_for_sky_tool"]
    with pytest.raises(UnusableAnswer) as err:
        read_recorded(write(tmp_path, "3_CoT@1.json", bad))
    assert err.value.field == "answer_generation.train_messages[0][2].function_call"
    assert "is a list, not a call object" in err.value.problem
    tree = good_answer(4, "Oslo")
    del tree["trys"]
    tree["tree"] = {"tree": {"node_type": "Action Input", "description": "", "children": [
        {"node_type": "Thought", "description": "t", "children": [{"node_type": "Action", "description": 7}]}]}}
    with pytest.raises(UnusableAnswer) as err:
        load_answer(write(tmp_path, "4_DFS_woFilter_w2.json", tree))
    assert err.value.field == "tree.tree.children[0].children[0].description"


def test_cache_build_refuses_hostile_files_and_caches_the_others(tmp_path, capsys):
    answers = tmp_path / "answers"
    for query_id, city in ((1, "Oslo"), (2, "Lima")):
        write(answers, f"{query_id}_CoT@1.json", good_answer(query_id, city))
    expected = hostile_files(answers)
    out = tmp_path / "cache"
    assert tba(["cache", "build", "--answers", str(answers), "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["answer_files"] == 2
    for name, reason in expected.items():
        line = next(line for line in captured.err.splitlines() if name in line)
        assert f"{reason}: field " in line, line
    assert "REFUSED 6 of 8 answer files (malformed 3, too_deeply_nested 1, unsafe_function_name 2)" in captured.err
    assert "Traceback" not in captured.err
    cached = {key for path in out.rglob("*.json") for key in json.loads(path.read_text())}
    assert cached == {str({"city": "Oslo"}), str({"city": "Lima"})}  # the good files' calls, nothing else
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and answers not in p.parents and out not in p.parents]
    assert outside == [] and not list(tmp_path.parent.glob("evil*"))


def test_cache_build_with_only_hostile_files_is_exit_2_and_writes_nothing(tmp_path, capsys):
    hostile_files(tmp_path / "answers")
    out = tmp_path / "cache"
    assert tba(["cache", "build", "--answers", str(tmp_path / "answers"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no answer file could be used (6 refused" in err and "10_CoT@1.json: too_deeply_nested" in err
    assert not out.exists()


def test_convert_refuses_hostile_files_and_converts_the_others_as_without_them(tmp_path, capsys):
    folder = tmp_path / "answers"
    write(folder, "1_CoT@1.json", good_answer(1, "Oslo"))
    write(folder, "20_CoT@1.json", invalid_answer(20))  # after the hostile ones in name order: RNG-dependent
    hostile_files(folder)
    clean = tmp_path / "clean"  # the same folder without the files convert must refuse
    shutil.copytree(folder, clean)
    for name in ("10_CoT@1.json", "13_CoT@1.json", "14_CoT@1.json", "15_CoT@1.json"):
        (clean / GROUP / name).unlink()
    deep_tree = invalid_answer(16)
    del deep_tree["trys"]
    inner = {"node_type": "Action Input", "description": "{}", "children": []}
    for _ in range(300):  # parses (under json's limit), too deep to copy and walk recursively
        inner = {"node_type": "Thought", "description": "t", "children": [inner]}
    deep_tree["tree"] = {"size": 300, "max_length": 300, "tree": inner}
    write(folder, "16_DFS_woFilter_w2.json", deep_tree)
    out = tmp_path / "converted.json"
    assert tba(["convert", "--answers", str(folder / GROUP), "--method", "CoT@1", "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "REFUSED 4 of 8 answer files (malformed 3, too_deeply_nested 1)" in err  # '..' makes no path here
    assert "14_CoT@1.json: field 'answer_generation.train_messages[0][2].function_call'" in err
    assert "Traceback" not in err
    converted = json.loads(out.read_text())
    assert sorted(converted) == ["1", "11", "12", "20"]
    # the refused files drew nothing from the fallback RNG: query 20 falls back as in a folder without them
    alone = convert_folder(clean / GROUP, "CoT@1")
    assert converted == alone
    tries = [convert_folder(clean / GROUP, "CoT@1", seed=seed)["20"]["answer"]["answer_details"][0]["next"][0]
             ["next"][0]["message"]["name"] for seed in range(8)]
    assert len(set(tries)) > 1  # the fallback try is random, so a refused file that drew would show
    dfs_out = tmp_path / "dfs.json"
    write(folder, "17_DFS_woFilter_w2.json", json.loads(json.dumps(invalid_answer(17))) | {"tree": {
        "size": 1, "max_length": 1, "tree": {"node_type": "Action Input", "description": "", "children": []}}})
    assert tba(["convert", "--answers", str(folder / GROUP), "--method", "DFS", "--out", str(dfs_out)]) == 3
    err = capsys.readouterr().err
    assert "16_DFS_woFilter_w2.json: nested too deeply to walk" in err and sorted(json.loads(dfs_out.read_text())) \
        == ["17"]


def test_convert_with_only_hostile_files_is_exit_2_and_writes_nothing(tmp_path, capsys):
    hostile_files(tmp_path / "answers")
    for name in ("11_CoT@1.json", "12_CoT@1.json"):  # convertible: '..' in a name is not a path to convert
        (tmp_path / "answers" / GROUP / name).unlink()
    out = tmp_path / "converted.json"
    assert tba(["convert", "--answers", str(tmp_path / "answers" / GROUP), "--method", "CoT@1",
                "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no answer file could be converted (4 refused)" in err and "15_CoT@1.json" in err and not out.exists()


def test_replay_refuses_hostile_files_and_replays_the_others(tmp_path, capsys):
    answers = tmp_path / "answers"
    for query_id, city in ((1, "Oslo"), (2, "Lima")):
        write(answers, f"{query_id}_CoT@1.json", good_answer(query_id, city))
    expected = hostile_files(answers)
    long_chain = good_answer(16, "Faro")  # a flat chain of 1,500 turns: the turn tree nests that deep
    long_chain["trys"][0]["chain"] = [node("Thought", f"t{i}") for i in range(1500)] + long_chain["trys"][0]["chain"]
    write(answers, "16_CoT@1.json", long_chain)
    expected["16_CoT@1.json"] = "too_deeply_nested"
    out_root = tmp_path / "replays"
    assert tba(["replay", str(answers), "--name", "r", "--out-root", str(out_root)]) == 3
    captured = capsys.readouterr()
    assert "replayed 2 of 9 files" in captured.out
    assert "not replayed: malformed 3, too_deeply_nested 2, unsafe_function_name 2" in captured.out
    lines = {Path(line["source"]).name: line for line in
             map(json.loads, (out_root / "r" / "replay.jsonl").read_text().splitlines())}
    for name, reason in expected.items():
        assert lines[name]["reason"] == reason and lines[name]["answer"] is None, lines[name]
        assert lines[name]["field"] and lines[name]["message"]
        assert f"not replayed {answers / GROUP / name}: {reason}: field " in captured.err
    for name in ("1_CoT@1.json", "2_CoT@1.json"):
        assert lines[name]["reason"] is None and lines[name]["actions_exact"] == lines[name]["actions_recorded"] == 2
    assert "Traceback" not in captured.err
    assert not [p for p in tmp_path.rglob("*evil*")]


def test_released_files_next_to_hostile_ones(tmp_path, capsys):
    """Released third-party answer files (copied from ../shared) keep replaying and caching exactly."""
    corpus = _need(FIXTURES_ROOT / "third_party_runs", "the third-party answer files")
    released = sorted(corpus.rglob("*_CoT@1.json"))[:3] + sorted(corpus.rglob("*_DFS_woFilter_w2.json"))[:2]
    answers = tmp_path / "answers"
    for path in released:
        target = answers / path.parent.name / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    expected = hostile_files(answers)
    assert tba(["cache", "build", "--answers", str(answers), "--out", str(tmp_path / "cache")]) == 3
    captured = capsys.readouterr()
    assert json.loads(captured.out)["answer_files"] == len(released)
    assert f"REFUSED {len(expected)} of {len(expected) + len(released)} answer files" in captured.err
    assert tba(["replay", str(answers), "--name", "r", "--out-root", str(tmp_path / "replays")]) == 3
    assert f"replayed {len(released)} of {len(released) + len(expected)} files" in capsys.readouterr().out
