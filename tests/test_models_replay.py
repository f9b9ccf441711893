"""replay over released answer files: every recorded turn comes back for its path and attempt."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from runners.models import BACKENDS
from runners.models.base import ModelRequest
from runners.models.replay import ReplayBackend
from toolbench_adapter.errors import InputError

EXAMPLE_ANSWERS = ("virtual_chatgpt_cot", "virtual_chatgpt_dfs")


def ask(backend: ReplayBackend, group: str, query_id: int, method: str, path: list, attempt: int):
    key = {"group": group, "query_id": query_id, "method": method, "path": path, "attempt": attempt}
    return backend.complete(ModelRequest(key=key))


# An oracle written straight from the node JSON (reference §7.1), independent of runners/models/recorded_turns.py:
# a turn is [Thought] Action ActionInput, or a Thought alone; returns (text, name, arguments, node whose children follow).
def expected_turn(node: dict):
    if node["node_type"] == "Action":
        action_input = node["children"][0]
        return None, node["description"], action_input["description"], action_input
    children = node.get("children", [])
    if len(children) != 1 or children[0]["node_type"] != "Action" or node.get("expand_num", 0):
        return node["description"], None, None, node  # a Thought the search expanded itself: a text-only turn
    action_input = children[0]["children"][0]
    return node["description"], children[0]["description"], action_input["description"], action_input


def replay_like_dfs(backend, ident, node: dict, path: list, seen: list) -> None:
    """Expand every recorded child in order, depth first, as DFSDT does, and compare each answer."""
    for attempt, child in enumerate(node.get("children", [])):
        text, name, arguments, below = expected_turn(child)
        completion = ask(backend, *ident, path, attempt)
        assert completion.error is None, completion.error
        assert completion.text == text
        if name is None:
            assert completion.tool_calls is None
            replay_like_dfs(backend, ident, below, path, seen)
            continue
        [call] = completion.tool_calls
        assert (call["function"]["name"], call["function"]["arguments"]) == (name, arguments)
        assert call["type"] == "function" and call["id"].startswith("replay_")
        seen.append((name, arguments))
        replay_like_dfs(backend, ident, below, path + [[name, arguments]], seen)


def replay_like_cot(backend, ident, chain: list[dict], seen: list, text_only: set) -> None:
    """text_only: contents of recorded assistant messages without a call (those Thoughts were turns alone)."""
    path, i = [], 0
    while i < len(chain):
        node = chain[i]
        completion = ask(backend, *ident, path, 0)
        assert completion.error is None, completion.error
        if node["node_type"] == "Thought":
            assert completion.text == node["description"]
            i += 1
            if i == len(chain) or chain[i]["node_type"] != "Action" or node["description"] in text_only:
                assert completion.tool_calls is None
                continue
        else:
            assert completion.text is None
        name, arguments = chain[i]["description"], chain[i + 1]["description"]
        assert [(c["function"]["name"], c["function"]["arguments"]) for c in completion.tool_calls] == [(name, arguments)]
        seen.append((name, arguments))
        path.append([name, arguments])
        i += 2


def action_nodes(answer: dict) -> list[tuple[str, str]]:
    """Every recorded call in the file, read directly off the Action / Action Input nodes."""
    found = []

    def visit(node):
        if node["node_type"] == "Action":
            found.append((node["description"], node["children"][0]["description"] if node.get("children") else ""))
        for child in node.get("children", []):
            visit(child)

    if "tree" in answer:
        visit(answer["tree"]["tree"])
    for attempt in answer.get("trys", []):
        chain = attempt["chain"]
        found += [(n["description"], chain[i + 1]["description"]) for i, n in enumerate(chain) if n["node_type"] == "Action"]
    return found


def check_every_turn(backend: ReplayBackend, ident: tuple, answer: dict) -> list:
    seen: list = []
    if "tree" in answer:
        replay_like_dfs(backend, ident, answer["tree"]["tree"], [], seen)
    else:
        text_only = {m["content"] for messages in answer["answer_generation"].get("train_messages") or []
                     for m in messages if m["role"] == "assistant" and m.get("content")
                     and not m.get("function_call") and not m.get("tool_calls")}
        for attempt in answer["trys"]:
            replay_like_cot(backend, ident, attempt["chain"], seen, text_only)
    assert seen == action_nodes(answer)  # all of them, in recorded order
    return seen


def test_registry_name():
    assert BACKENDS.get("replay") is ReplayBackend


@pytest.mark.parametrize("run", EXAMPLE_ANSWERS)
def test_every_turn_of_the_released_example_answers_is_retrievable(stb_root, run):
    folder = stb_root / "data_example" / "answer" / run
    files = sorted(folder.glob("G1_instruction/*.json"))
    assert len(files) == 3
    backend = ReplayBackend(answers=folder)
    backend.preflight()
    for file in files:
        query_id, method = file.stem.split("_", 1)
        seen = check_every_turn(backend, ("G1_instruction", int(query_id), method), json.loads(file.read_text()))
        assert seen


def test_dfs_siblings_come_back_by_attempt(stb_root):
    """588's DFS tree: after the first search call, attempt 0 and attempt 1 are two different recorded turns."""
    folder = stb_root / "data_example" / "answer" / "virtual_chatgpt_dfs" / "G1_instruction"
    tree = json.loads((folder / "588_DFS_woFilter_w2.json").read_text())["tree"]["tree"]
    first_action = tree["children"][0]
    first_input = first_action["children"][0]
    path = [[first_action["description"], first_input["description"]]]
    backend = ReplayBackend(answers=folder)  # the group folder itself works too
    first = ask(backend, "G1_instruction", 588, "DFS_woFilter_w2", path, 0)
    second = ask(backend, "G1_instruction", 588, "DFS_woFilter_w2", path, 1)
    sibling_thought = first_input["children"][1]
    assert sibling_thought["node_type"] == "Thought"
    assert first.text is None
    assert first.tool_calls[0]["function"]["name"] == first_input["children"][0]["description"]
    assert second.text == sibling_thought["description"]
    assert second.tool_calls[0]["function"]["name"] == sibling_thought["children"][0]["description"]
    assert first.tool_calls[0]["id"] != second.tool_calls[0]["id"]


def fixture_trajectories(fixtures_root: Path, tmp_path: Path) -> list[tuple[str, int, str, dict]]:
    """The ToolLLaMA answer files, laid out as a run folder ({group}/{qid}_{method}.json)."""
    out = []
    for file in sorted((fixtures_root / "trajectories").glob("EduardoTrevino__*.json")):
        match = re.search(r"_(\d+)_(CoT@\d+|DFS_woFilter_w\d+)\.json$", file.name)
        query_id, method = int(match.group(1)), match.group(2)
        group = f"fixture{len(out)}"
        (tmp_path / group).mkdir()
        shutil.copy(file, tmp_path / group / f"{query_id}_{method}.json")
        out.append((group, query_id, method, json.loads(file.read_text())))
    return out


def test_every_turn_of_the_toolllama_trajectories_is_retrievable(fixtures_root, tmp_path):
    runs = fixture_trajectories(fixtures_root, tmp_path)
    assert {method.split("_")[0].split("@")[0] for _, _, method, _ in runs} == {"CoT", "DFS"}
    backend = ReplayBackend(answers=tmp_path)
    for group, query_id, method, answer in runs:
        check_every_turn(backend, (group, query_id, method), answer)


def test_identical_sibling_calls_are_served_in_recorded_order(fixtures_root, tmp_path):
    """26661: under the first get_players call, both children call get_players again with {} but differ in text."""
    runs = {qid: (group, method, answer) for group, qid, method, answer in fixture_trajectories(fixtures_root, tmp_path)}
    group, method, answer = runs[26661]
    node = answer["tree"]["tree"]["children"][0]["children"][0]["children"][0]  # Thought > Action > Action Input
    twins = [expected_turn(child)[:3] for child in node["children"][0]["children"][0]["children"][0]["children"]]
    assert len(twins) == 2 and twins[0][1:] == twins[1][1:] and twins[0][0] != twins[1][0]
    backend = ReplayBackend(answers=tmp_path)
    check_every_turn(backend, (group, 26661, method), answer)


def text_only_answer() -> dict:
    """A DFS tree with a turn that made no call (a Thought with no Action after it, §7.2); the next turns
    hang below that Thought."""
    def n(kind, description, *children):
        return {"node_type": kind, "description": description, "children": list(children)}

    tree = n("Action Input", "",
             n("Thought", "I should think first.",
               n("Action", "f", n("Action Input", "{}")),
               n("Thought", "Or call h.", n("Action", "h", n("Action Input", "{}")))),
             n("Action", "g", n("Action Input", '{"a": 1}',
                                n("Thought", "done", n("Action", "Finish", n("Action Input", '{"return_type": "give_answer"}'))))))
    return {"win": True, "tree": {"size": 0, "max_length": 0, "tree": tree}}


def test_a_turn_without_a_call_is_replayed_as_text_only(tmp_path):
    (tmp_path / "G1").mkdir()
    answer = text_only_answer()
    (tmp_path / "G1" / "7_DFS_woFilter_w2.json").write_text(json.dumps(answer))
    backend = ReplayBackend(answers=tmp_path)
    # the text-only turn first; then, from that Thought node (same path, no calls yet), its two children
    first = ask(backend, "G1", 7, "DFS_woFilter_w2", [], 0)
    assert first.text == "I should think first." and first.tool_calls is None and first.finish_reason == "stop"
    below_0 = ask(backend, "G1", 7, "DFS_woFilter_w2", [], 0)
    below_1 = ask(backend, "G1", 7, "DFS_woFilter_w2", [], 1)
    assert below_0.text is None and below_0.tool_calls[0]["function"]["name"] == "f"
    assert below_1.text == "Or call h." and below_1.tool_calls[0]["function"]["name"] == "h"
    # back at the root: its second child
    root_1 = ask(backend, "G1", 7, "DFS_woFilter_w2", [], 1)
    assert root_1.tool_calls[0]["function"]["name"] == "g"
    # and the same walk from a fresh backend matches the generic oracle
    check_every_turn(ReplayBackend(answers=tmp_path), ("G1", 7, "DFS_woFilter_w2"), answer)


def test_a_second_replay_of_the_same_query_repeats_it(stb_root):
    folder = stb_root / "data_example" / "answer" / "virtual_chatgpt_cot"
    answer = json.loads((folder / "G1_instruction" / "1073_CoT@1.json").read_text())
    backend = ReplayBackend(answers=folder)
    first = check_every_turn(backend, ("G1_instruction", 1073, "CoT@1"), answer)
    assert check_every_turn(backend, ("G1_instruction", 1073, "CoT@1"), answer) == first


def test_misses_are_error_completions_not_exceptions(stb_root):
    backend = ReplayBackend(model=str(stb_root / "data_example" / "answer" / "virtual_chatgpt_cot"))
    wrong_path = ask(backend, "G1_instruction", 1073, "CoT@1", [["no_such_call", "{}"]], 0)
    assert wrong_path.error.startswith("replay: no recorded turn for G1_instruction/1073_CoT@1")
    assert "no_such_call" in wrong_path.error
    missing_file = ask(backend, "G1_instruction", 99999, "CoT@1", [], 0)
    assert "no answer file G1_instruction/99999_CoT@1.json" in missing_file.error
    bad_key = backend.complete(ModelRequest(key={"group": "G1_instruction"}))
    assert "lacks query_id, method, path, attempt" in bad_key.error


def test_bad_folders_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="answer folder not found"):
        ReplayBackend(answers=tmp_path / "nowhere")
    with pytest.raises(InputError, match="needs answer folders"):
        ReplayBackend()
    with pytest.raises(InputError, match="no answer files"):
        ReplayBackend(answers=tmp_path).preflight()


def test_a_replay_gap_is_an_infrastructure_failure(stb_root):
    """No recorded turn (or no file) for a request: an error Completion the runner counts as a replay gap."""
    backend = ReplayBackend(answers=stb_root / "data_example" / "answer" / "virtual_chatgpt_cot")
    for completion in (ask(backend, "G1_instruction", 1073, "CoT@1", [["no_such_call", "{}"]], 0),
                       ask(backend, "G1_instruction", 99999, "CoT@1", [], 0)):
        assert completion.error and completion.error_kind == "replay_gap"
    bad_key = backend.complete(ModelRequest(key={"group": "G1_instruction"}))
    assert bad_key.error_kind is None  # a harness bug, not a gap in the recording


def test_the_natural_dialect_is_what_the_recordings_hold(stb_root, tmp_path):
    assert ReplayBackend(answers=stb_root / "data_example" / "answer" / "virtual_chatgpt_cot").natural_dialect() == \
        "openai-tools"  # function_call messages
    (tmp_path / "G1").mkdir()
    (tmp_path / "G1" / "7_DFS_woFilter_w2.json").write_text(json.dumps(text_only_answer()))
    assert ReplayBackend(answers=tmp_path).natural_dialect() == "openai-tools"  # nodes only: native calls
    react = text_only_answer()
    react["answer_generation"] = {"train_messages": [[
        {"role": "assistant", "content": "Thought: I should call g.\nAction: g\nAction Input: {\"a\": 1}"}]]}
    (tmp_path / "G1" / "7_DFS_woFilter_w2.json").write_text(json.dumps(react))
    assert ReplayBackend(answers=tmp_path).natural_dialect() == "toolllama"


def test_a_text_prompt_gets_the_turn_as_react_text(tmp_path):
    (tmp_path / "G1").mkdir()
    (tmp_path / "G1" / "7_DFS_woFilter_w2.json").write_text(json.dumps(text_only_answer()))
    backend = ReplayBackend(answers=tmp_path)
    key = {"group": "G1", "query_id": 7, "method": "DFS_woFilter_w2", "path": [["g", '{"a": 1}']], "attempt": 0}
    completion = backend.complete(ModelRequest(prompt="System: ...", key=key))
    assert completion.tool_calls is None
    assert completion.text == 'Thought: done\nAction: Finish\nAction Input: {"return_type": "give_answer"}'
