"""A released run through the whole pipeline: the replay backend plays the recorded assistant turns,
the embedded server answers from a cache built from the same answers, and our CoT / DFSDT drivers must
reproduce the recorded actions, arguments, observations and status codes."""

import json
from pathlib import Path

import pytest

from runners.config import RunConfig
from runners.execution.runner import Runner
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.cache_build import build_cache
from toolbench_adapter.server.runner import EmbeddedServer

TRUNCATED_LENGTH = 1024 + len("...")


def shape(node):
    """What a replay must reproduce for one node, and whether its recorded observation was cut."""
    return (node["node_type"], node["description"], node.get("observation"), node.get("observation_code"))


def flatten_tree(node):
    yield node
    for child in node.get("children", []):
        yield from flatten_tree(child)


@pytest.mark.parametrize("folder,method", [("virtual_chatgpt_cot", "CoT@1"),
                                           ("virtual_chatgpt_dfs", "DFS_woFilter_w2")])
def test_replay_reproduces_released_runs(stb_root, tmp_path, folder, method):
    answers = stb_root / "data_example" / "answer" / folder
    report = build_cache([answers], stb_root, tmp_path / "cache")
    server = build_virtual_server(ServerConfig(cache_dir=tmp_path / "cache", stb_root=stb_root, simulator="none",
                                               save=False))
    cfg = RunConfig(name="replay", out_root=str(tmp_path / "runs"), stb_root=str(stb_root),
                    groups=["G1_instruction"], query_ids=[588, 608, 1073], method=method, backend="replay",
                    backend_options={"answers": str(answers)}, dialect="openai-tools", flavour="legacy")
    with EmbeddedServer(create_app(server)) as embedded:
        Runner(cfg, server_url=embedded.url, progress=False).run()
    compared = cut = 0
    for recorded_path in sorted((answers / "G1_instruction").glob("*.json")):
        recorded = json.loads(recorded_path.read_text())
        ours = json.loads((tmp_path / "runs" / "replay" / "G1_instruction" / recorded_path.name).read_text())
        if method.startswith("CoT"):
            expected_nodes = [n for t in recorded["trys"] for n in t["chain"]]
            our_nodes = [n for t in ours["trys"] for n in t["chain"]]
        else:
            expected_nodes = list(flatten_tree(recorded["tree"]["tree"]))
            our_nodes = list(flatten_tree(ours["tree"]["tree"]))
            assert ours["tree"]["size"] == recorded["tree"]["size"]
        assert len(our_nodes) == len(expected_nodes), recorded_path.name
        for expected, got in zip(expected_nodes, our_nodes, strict=True):
            assert got["node_type"] == expected["node_type"] and got["description"] == expected["description"]
            assert got["depth"] == expected["depth"]
            observation = expected.get("observation")
            cut += bool(observation and len(observation) == TRUNCATED_LENGTH and observation.endswith("..."))
            assert shape(got) == shape(expected), (recorded_path.name, expected["description"][:60])
            compared += 1
        assert ours["win"] == recorded["win"]
        assert ours["answer_generation"]["valid_data"] == recorded["answer_generation"]["valid_data"]
        assert ours["answer_generation"]["final_answer"] == recorded["answer_generation"]["final_answer"]
        assert ours["answer_generation"]["query_count"] == recorded["answer_generation"]["query_count"]
        assert ours["answer_generation"]["function"] == recorded["answer_generation"]["function"]
    assert compared > 20
    # observations stored cut at 1024 characters replay exactly too (rebuilt answers, counted as such)
    assert report.reconstructed >= (1 if cut else 0)  # DFS: 15 observations were stored cut


# -- tba replay: any layout, the queries from the files, names byte for byte --------------------------------

def replay_lines(folder):
    return [json.loads(line) for line in (folder / "replay.jsonl").read_text().splitlines()]


def test_tba_replay_from_a_cold_start_keeps_the_released_examples_exact(stb_root, tmp_path, monkeypatch):
    """No checkout (TBA_STB_ROOT unset): the queries come from the answer files; every node comes back."""
    from runners.cli import main as tba

    monkeypatch.delenv("TBA_STB_ROOT", raising=False)
    answers = stb_root / "data_example" / "answer"
    assert tba(["replay", str(answers), "--name", "stb", "--out-root", str(tmp_path)]) == 0
    lines = replay_lines(tmp_path / "stb")
    assert len(lines) == 6 and all(line["reason"] is None for line in lines)
    assert {line["query_source"] for line in lines} == {"answer_file"}
    assert sum(line["actions_exact"] for line in lines) == sum(line["actions_recorded"] for line in lines) == 46
    assert sum(line["observations_exact"] for line in lines) == sum(line["observations_recorded"] for line in lines) == 46
    assert all(line["final_answer_equal"] and line["differences"] == [] for line in lines)
    nodes = 0
    for line in lines:
        recorded, ours = json.loads(open(line["source"]).read()), json.loads(open(line["answer"]).read())
        if "tree" in recorded:
            pairs = zip(flatten_tree(recorded["tree"]["tree"]), flatten_tree(ours["tree"]["tree"]), strict=True)
        else:
            pairs = zip([n for t in recorded["trys"] for n in t["chain"]], [n for t in ours["trys"] for n in t["chain"]],
                        strict=True)
        for expected, got in pairs:
            assert shape(got) == shape(expected) and got["depth"] == expected["depth"]
            nodes += 1
    assert nodes == 113  # every node of the six files (DFS roots included) reproduced


def test_replay_takes_stabletoolbench_queries_when_they_are_there(stb_root, tmp_path):
    from runners.replay import replay

    result = replay([stb_root / "data_example" / "answer"], "stb", out_root=tmp_path, stb_root=stb_root)
    assert {line["query_source"] for line in result.lines} == {"stabletoolbench"}
    totals = result.totals()
    assert (totals["actions_exact"], totals["observations_exact"], totals["replayed"]) == (46, 46, 6)


TOOLS = [{"category_name": "Weather", "tool_name": "Sky Tool", "api_name": "Now", "required_parameters": [],
          "optional_parameters": []},
         {"category_name": "Weather", "tool_name": "Sky Tool", "api_name": "Later", "required_parameters": [],
          "optional_parameters": []}]


def toolbench_file(folder, first_name="now_for_sky_tool\n", second_name=""):
    """A ToolBench-style CoT@1 answer in a fork's layout: a call whose name ends with a newline (status 1,
    upstream does not strip it), then a call with an empty name (upstream: suffix-matches the first function)."""
    from toolbench_adapter.protocol import env as E
    from toolbench_adapter.queryset.queries import Query
    from toolbench_adapter.queryset.toolset import build_toolset

    functions = build_toolset(Query(1, "G2_instruction", "q", TOOLS), "legacy").functions
    no_such = json.dumps({"error": E.NO_SUCH_FUNCTION_ERROR.format(name=first_name), "response": ""})
    cold = json.dumps({"error": "", "response": "cold"})
    finish = '{"return_type": "give_answer", "final_answer": "cold"}'

    def node(kind, description, observation=None, code=None):
        data = {"node_type": kind, "description": description, "children": []}
        if observation is not None:
            data.update(observation=observation, observation_code=code)
        return data

    chain = [node("Thought", "t1"), node("Action", first_name), node("Action Input", '{"city": "Oslo"}', no_such, 1),
             node("Thought", "t2"), node("Action", second_name), node("Action Input", '{"city": "Oslo"}', cold, 0),
             node("Thought", "t3"), node("Action", "Finish"), node("Action Input", finish, E.FINISH_SUCCESS, 3)]
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "weather in Oslo?"}]
    for thought, name, arguments, observation in (("t1", first_name, '{"city": "Oslo"}', no_such),
                                                 ("t2", second_name, '{"city": "Oslo"}', cold)):
        messages += [{"role": "assistant", "content": thought, "function_call": {"name": name, "arguments": arguments}},
                     {"role": "function", "name": name, "content": observation}]
    messages.append({"role": "assistant", "content": "t3", "function_call": {"name": "Finish", "arguments": finish}})
    answer = {"win": True, "try_count": 1, "trys": [{"chain": chain}], "compare_candidates": [],
              "forward_args": {"single_chain_max_step": 12, "pass_at": 1},
              "answer_generation": {"valid_data": True, "final_answer": finish, "function": functions,
                                    "query": "weather in Oslo?", "train_messages": [messages]}}
    path = folder / "A_G2_instruction_toolllama-2" / "run_G2_instruction_toolllama-2_81506_CoT@1.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(answer))
    return path


def test_names_are_matched_byte_for_byte_and_an_empty_name_calls_the_first_function(tmp_path):
    from runners.replay import replay

    toolbench_file(tmp_path / "in")
    [line] = replay([tmp_path / "in"], "stb", out_root=tmp_path).lines
    assert (line["group"], line["query_id"], line["method"]) == ("G2_instruction", 81506, "CoT@1")
    assert line["reason"] is None and line["differences"] == []
    assert (line["actions_exact"], line["observations_exact"]) == (3, 3)  # "x\n" kept: status 1; "" -> now_for_sky_tool
    ours = json.loads(open(line["answer"]).read())["trys"][0]["chain"]
    assert [n["description"] for n in ours if n["node_type"] == "Action"] == ["now_for_sky_tool\n", "", "Finish"]
    [strict] = replay([tmp_path / "in"], "strict", out_root=tmp_path, compat="strict").lines
    assert strict["actions_exact"] == 3 and [d["kind"] for d in strict["differences"]] == ["observation_differs"]


def test_a_queries_file_gives_the_query_and_its_functions(tmp_path):
    from runners.replay import replay

    toolbench_file(tmp_path / "in", first_name="later_for_sky_tool")
    queries = tmp_path / "G2_query.json"
    queries.write_text(json.dumps([{"query": "weather in Oslo?", "query_id": 81506, "api_list": TOOLS}]))
    [line] = replay([tmp_path / "in"], "q", out_root=tmp_path, queries_file=queries).lines
    assert line["query_source"] == "query_file" and line["actions_exact"] == 3


def test_files_that_cannot_be_replayed_get_a_reason_and_exit_3(tmp_path, capsys):
    from runners.cli import main as tba

    toolbench_file(tmp_path / "in")
    (tmp_path / "in" / "notes.json").write_text('{"a": 1}')
    (tmp_path / "in" / "cut_CoT@1.json").write_text('{"answer_generation": ')
    nameless = json.loads(next((tmp_path / "in").rglob("*81506_CoT@1.json")).read_text())
    nameless["answer_generation"]["query"] = "a query no query set holds"
    (tmp_path / "in" / "run_CoT@1.json").write_text(json.dumps(nameless))
    assert tba(["replay", str(tmp_path / "in"), "--name", "r", "--out-root", str(tmp_path / "out")]) == 3
    captured = capsys.readouterr()
    assert "replayed 1 of 4 files" in captured.out
    assert "no_query_id 1, not_an_answer_file 1, not_json 1" in captured.out
    lines = {Path(line["source"]).name: line for line in replay_lines(tmp_path / "out" / "r")}
    assert lines["notes.json"]["answer"] is None and lines["notes.json"]["reason"] == "not_an_answer_file"
    assert lines["cut_CoT@1.json"]["reason"] == "not_json" and lines["run_CoT@1.json"]["reason"] == "no_query_id"
    assert tba(["replay", str(tmp_path / "nowhere"), "--name", "r", "--out-root", str(tmp_path / "out")]) == 2
