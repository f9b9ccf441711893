"""`tba cache build`: answer files of every shape -> cache entries in the upstream layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runners.cli import main as tba
from toolbench_adapter.errors import InputError
from toolbench_adapter.protocol import env as E
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.server.cache_build import build_cache, identify

API_LIST = [{"category_name": "Weather", "tool_name": "Sky Tool", "api_name": "Now", "required_parameters": [],
             "optional_parameters": []},
            {"category_name": "Weather", "tool_name": "Sky Tool", "api_name": "Later", "required_parameters": [],
             "optional_parameters": []}]
FUNCTIONS = build_toolset(Query(query_id=5, group="G1_instruction", query="q", api_list=API_LIST)).functions
LONG = json.dumps({"error": "", "response": "z" * 3000})[:1024] + "..."


def obs(value) -> str:
    return json.dumps({"error": "", "response": value})


@pytest.fixture()
def stb(tmp_path) -> Path:
    folder = tmp_path / "stb" / "solvable_queries" / "test_instruction"
    folder.mkdir(parents=True)
    (folder / "G1_instruction.json").write_text(json.dumps([{"query_id": 5, "query": "q", "api_list": API_LIST}]))
    return tmp_path / "stb"


def node(kind, description, observation=None, code=None, children=()):
    data = {"node_type": kind, "description": description, "children": list(children)}
    if observation is not None:
        data["observation"], data["observation_code"] = observation, code
    return data


def write(folder: Path, name: str, answer: dict) -> Path:
    path = folder / "G1_instruction" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(answer))
    return path


def cot_answer():
    chain = [node("Action", "now_for_sky_tool"), node("Action Input", '{"city": "Oslo", "n": 2}', obs("cold"), 0),
             node("Action", "ghost_fn"), node("Action Input", "{}", obs("x"), 1),
             node("Action", "later_for_sky_tool"), node("Action Input", "{}", LONG, 0),
             node("Action", "now_for_sky_tool"), node("Action Input", '{"city": "Rome"}',
                                                      json.dumps({"error": E.TIMEOUT_ERROR, "response": ""}), 5),
             node("Action", "Finish"), node("Action Input", '{"return_type": "give_up_and_restart"}',
                                            E.FINISH_GIVE_UP, 4)]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                {"role": "assistant", "content": None, "function_call": {"name": "now_for_sky_tool",
                                                                        "arguments": '{"city": "Oslo", "n": 2}'}},
                {"role": "function", "name": "now_for_sky_tool", "content": obs("cold")},
                {"role": "assistant", "content": None, "function_call": {"name": "sky_tool", "arguments": ""}},
                {"role": "function", "name": "sky_tool", "content": obs("suffix hit")}]
    return {"win": False, "trys": [{"chain": chain}], "compare_candidates": [],
            "answer_generation": {"function": FUNCTIONS, "train_messages": [messages]}}


def dfs_answer():
    # current-flavour messages: tool_calls answered by tool messages (matched by id, out of order)
    messages = [{"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "later_for_sky_tool", "arguments": '{"day": 1}'}},
        {"id": "b", "type": "function", "function": {"name": "now_for_sky_tool", "arguments": "{bad"}}]},
        {"role": "tool", "name": "now_for_sky_tool", "tool_call_id": "b", "content": obs("parse")},
        {"role": "tool", "name": "later_for_sky_tool", "tool_call_id": "a", "content": obs("rain")}]
    tree = node("Action Input", "", children=[node("Thought", "t", children=[
        node("Action", "now_for_sky_tool", children=[node("Action Input", '{"city": "Oslo", "n": 2}', obs("warm"), 0)]),
        node("Action", "later_for_sky_tool", children=[node("Action Input", '{"day": 2}', obs({"b": 1, "a": 2}), 0)]),
    ])])
    return {"win": True, "tree": {"size": 6, "max_length": 3, "tree": tree},
            "answer_generation": {"function": [{"type": "function", "function": f} for f in FUNCTIONS],
                                  "train_messages": [messages]}}


def test_one_run_becomes_exact_entries(stb, tmp_path):
    answers = tmp_path / "run"
    write(answers, "5_CoT@1.json", cot_answer())
    report = build_cache([answers], stb, tmp_path / "cache")
    entries = json.loads((tmp_path / "cache" / "Weather" / "sky_tool_for_Weather" / "now.json").read_text())
    # key = str(json.loads(arguments)); the empty-argument suffix hit ("sky_tool" -> now_for_sky_tool) is "{}"
    assert entries == {"{'city': 'Oslo', 'n': 2}": {"error": "", "response": "cold"},
                       "{}": {"error": "", "response": "suffix hit"}}
    # the observation stored cut at 1024 characters is rebuilt so that cutting it again gives the same bytes
    later = json.loads((tmp_path / "cache" / "Weather" / "sky_tool_for_Weather" / "later.json").read_text())
    assert json.dumps(later["{}"])[:1024] + "..." == LONG
    assert report.reconstructed == 1
    assert report.skipped == {"no_such_function": 1, "client_made_answer": 1, "finish": 1, "duplicate": 1}
    assert report.entries == 3 and report.conflicts == 0


def test_cut_observations_that_cannot_be_rebuilt_are_skipped():
    from toolbench_adapter.server.cache_build import reconstruct_truncated

    assert reconstruct_truncated(LONG) is not None
    cut_in_escape = ('{"error": "", "response": "' + "a" * 996 + '\\')[:1024]
    assert len(cut_in_escape) == 1024 and reconstruct_truncated(cut_in_escape + "...") is None
    assert reconstruct_truncated('{"error": "", "response": "short"}...') is None  # not cut at 1024
    def cut_inside_key(n):
        text = json.dumps({"error": "", "response": {"k" * n: 1, "pa": 2}})
        return text, text.index('"pa') + 3  # the cut lands between "pa and its closing quote
    text, end = cut_inside_key(900)
    text, end = cut_inside_key(900 + 1024 - end)
    assert end == 1024
    rebuilt = reconstruct_truncated(text[:1024] + "...")
    assert rebuilt is not None and json.dumps(rebuilt)[:1024] == text[:1024]


def test_trees_and_tool_messages(stb, tmp_path):
    answers = tmp_path / "run"
    write(answers, "5_DFS_woFilter_w2.json", dfs_answer())
    report = build_cache([answers], stb, tmp_path / "cache")
    later = json.loads((tmp_path / "cache" / "Weather" / "sky_tool_for_Weather" / "later.json").read_text())
    assert later == {"{'day': 2}": {"error": "", "response": {"b": 1, "a": 2}},
                     "{'day': 1}": {"error": "", "response": "rain"}}
    assert list(later["{'day': 2}"]["response"]) == ["b", "a"]  # key order kept for byte-exact replay
    assert report.skipped["arguments_not_json"] == 1


def test_two_runs_that_disagree_count_a_conflict_and_keep_the_first(stb, tmp_path):
    write(tmp_path / "a", "5_CoT@1.json", cot_answer())
    write(tmp_path / "b", "5_DFS_woFilter_w2.json", dfs_answer())
    report = build_cache([tmp_path / "a", tmp_path / "b"], stb, tmp_path / "cache")
    now = json.loads((tmp_path / "cache" / "Weather" / "sky_tool_for_Weather" / "now.json").read_text())
    assert now["{'city': 'Oslo', 'n': 2}"]["response"] == "cold" and report.conflicts == 1


def test_unknown_queries_and_names_are_counted_not_fatal(stb, tmp_path):
    write(tmp_path / "run", "5_CoT@1.json", cot_answer())
    write(tmp_path / "run", "99_CoT@1.json", cot_answer())  # no query 99, and the file holds no query text
    (tmp_path / "run" / "G1_instruction" / "notes.json").write_text("{}")
    report = build_cache([tmp_path / "run"], stb, tmp_path / "cache")
    assert report.skipped_files == {"query_not_found": 1, "not_an_answer_file": 1} and report.entries == 3
    assert {Path(r["path"]).name: r["reason"] for r in report.refused} == {
        "99_CoT@1.json": "query_not_found", "notes.json": "not_an_answer_file"}


def test_no_usable_file_is_an_input_error_listing_each_reason_and_writes_nothing(stb, tmp_path):
    write(tmp_path / "run", "99_CoT@1.json", cot_answer())
    (tmp_path / "run" / "G1_instruction" / "notes.json").write_text("{}")
    (tmp_path / "run" / "G1_instruction" / "7_CoT@1.json").write_text('{"cut": ')
    with pytest.raises(InputError) as caught:
        build_cache([tmp_path / "run"], stb, tmp_path / "cache")
    message = str(caught.value)
    assert "99_CoT@1.json: query_not_found" in message and "notes.json: not_an_answer_file" in message
    assert "7_CoT@1.json: not_json" in message
    assert not (tmp_path / "cache").exists()


def toolbench_answer(functions: list, name: str = "now_for_sky_tool") -> dict:
    """A ToolBench answer: its query and function list inside, a query id no query set holds."""
    chain = [node("Action", name), node("Action Input", '{"city": "Oslo"}', obs("cold"), 0)]
    return {"win": False, "trys": [{"chain": chain}], "compare_candidates": [],
            "answer_generation": {"query": "weather in Oslo?", "function": functions, "valid_data": False,
                                  "final_answer": "", "train_messages": []}}


def test_a_toolbench_file_in_any_layout_is_keyed_under_its_own_category(stb, tmp_path):
    """No category in ToolBench answers: the file's calls go under answer_{digest of the file}, which is what
    the replay's routes use too (same file, same key)."""
    from toolbench_adapter.answers.read import read_recorded
    from toolbench_adapter.answers.recorded_query import QueryResolver, recording_category

    path = tmp_path / "out" / "A_G2_instruction_toolllama-2" / "x_G2_instruction_toolllama-2_81506_CoT@1.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(toolbench_answer(FUNCTIONS)))
    report = build_cache([tmp_path / "out"], stb, tmp_path / "cache")
    category = recording_category(path)
    stored = tmp_path / "cache" / category / f"sky_tool_for_{category}" / "now.json"
    assert json.loads(stored.read_text()) == {"{'city': 'Oslo'}": {"error": "", "response": "cold"}}
    assert report.answer_files == 1 and report.entries == 1
    resolved = QueryResolver(stb).resolve(read_recorded(path))
    toolset = build_toolset(resolved.query)
    assert resolved.source == "answer_file" and resolved.query.query_id == 81506
    assert toolset.functions == FUNCTIONS  # sent verbatim
    route = toolset.routes["now_for_sky_tool"]
    assert (route.category, route.tool_name, route.api_name) == (category, "sky_tool", "now")


def test_identify():
    assert identify(Path("x/G2_category/123_DFS_woFilter_w2.json")) == ("G2_category", 123)
    assert identify(Path("x/other/123_CoT@1.json")) is None


def test_cli_build_and_bad_input(stb, tmp_path, capsys):
    write(tmp_path / "run", "5_CoT@1.json", cot_answer())
    assert tba(["cache", "build", "--answers", str(tmp_path / "run"), "--stb-root", str(stb),
                "--out", str(tmp_path / "cache")]) == 0
    assert json.loads(capsys.readouterr().out)["entries"] == 3  # two exact answers and one rebuilt from a cut observation
    assert tba(["cache", "build", "--answers", str(tmp_path / "missing"), "--out", str(tmp_path / "c2")]) == 2
    assert "answer folder or file not found" in capsys.readouterr().err
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "3_CoT@1.json").write_text("[]")
    assert tba(["cache", "build", "--answers", str(tmp_path / "junk"), "--out", str(tmp_path / "c3")]) == 2
    assert "3_CoT@1.json: not_an_answer_file" in capsys.readouterr().err and not (tmp_path / "c3").exists()


@pytest.mark.parametrize("blocked", ["file-in-the-way", "folder-at-a-file-name", "proc"])
def test_cli_build_into_an_unwritable_place_is_exit_2_naming_it(stb, tmp_path, capsys, blocked):
    write(tmp_path / "run", "5_CoT@1.json", cot_answer())
    out = tmp_path / "cache"
    if blocked == "file-in-the-way":
        (tmp_path / "blocker").write_text("a file")
        out = tmp_path / "blocker" / "cache"
    elif blocked == "folder-at-a-file-name":  # found only when writing: still exit 2, not a traceback
        (out / "Weather" / "sky_tool_for_Weather" / "now.json").mkdir(parents=True)
    else:  # read-only (chmod does not stop root; /proc does)
        out = Path("/proc/self/tba-cache")
    assert tba(["cache", "build", "--answers", str(tmp_path / "run"), "--stb-root", str(stb), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert ("cannot write" in err or "a folder has the name" in err) and "fix:" in err and "Traceback" not in err
    assert str(out) in err or "now.json" in err
    if blocked == "folder-at-a-file-name":  # refused before the first write: no other cache file was made
        assert sorted(p.name for p in out.rglob("*.json")) == ["now.json"]
