"""Converter: the released converted files reproduced exactly, both message styles, the random fallbacks."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from runners.cli import main
from toolbench_adapter.answers.convert import Converter, convert_folder
from toolbench_adapter.answers.read import STYLE_FUNCTION_CALL, STYLE_TOOL_CALLS, load_answer
from toolbench_adapter.errors import InputError

CASES = [("virtual_chatgpt_cot", "CoT@1"), ("virtual_chatgpt_dfs", "DFS_woFilter_w2")]


@pytest.mark.parametrize(("model", "method"), CASES)
def test_released_converted_files_are_reproduced_exactly(stb_root, tmp_path, model, method):
    answers = stb_root / "data_example" / "answer" / model / "G1_instruction"
    golden_path = stb_root / "data_example" / "model_predictions_converted" / model / "G1_instruction.json"
    golden_text = golden_path.read_text()
    golden = json.loads(golden_text)
    out = tmp_path / "G1_instruction.json"
    # upstream read the files in os.listdir order; its output's key order records that order
    assert main(["convert", "--answers", str(answers), "--method", method, "--out", str(out),
                 "--order-from", str(golden_path)]) == 0
    text = out.read_text()
    ours = json.loads(text)
    assert ours == golden
    assert json.dumps(ours, indent=2) == json.dumps(golden, indent=2)
    assert text == golden_text  # byte for byte: the released files are json.dumps without indent


def test_released_cot_answers_use_the_old_message_style_and_one_is_invalid(stb_root):
    folder = stb_root / "data_example" / "answer" / "virtual_chatgpt_cot" / "G1_instruction"
    invalid = load_answer(folder / "588_CoT@1.json")
    valid = load_answer(folder / "608_CoT@1.json")
    assert (invalid.kind, invalid.valid, invalid.query_id, invalid.method) == ("cot", False, "588", "CoT@1")
    assert valid.valid and valid.message_style == STYLE_FUNCTION_CALL


def test_order_changes_key_order_only_for_valid_answers(stb_root):
    answers = stb_root / "data_example" / "answer" / "virtual_chatgpt_dfs" / "G1_instruction"
    by_name = convert_folder(answers, "DFS_woFilter_w2", order="name")
    by_number = convert_folder(answers, "DFS_woFilter_w2", order="numeric")
    assert list(by_name) == ["1073", "588", "608"] and list(by_number) == ["588", "608", "1073"]
    assert by_name == by_number


def _messages_new_style():
    return [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "thinking", "function_call": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "f_for_t", "arguments": "{\"x\": 1}"}},
            {"id": "call_b", "type": "function", "function": {"name": "g_for_t", "arguments": "{}"}}]},
        {"role": "tool", "name": "g_for_t", "content": "resp-b", "tool_call_id": "call_b"},
        {"role": "tool", "name": "f_for_t", "content": "resp-a", "tool_call_id": "call_a"},
        {"role": "assistant", "content": "plain words"},
        {"role": "assistant", "content": None, "function_call": None, "tool_calls": [
            {"id": "call_c", "type": "function", "function": {"name": "Finish", "arguments": "{\"return_type\": \"give_answer\", \"final_answer\": \"42\"}"}},
            {"id": "call_d", "type": "function", "function": {"name": "h_for_t", "arguments": "{}"}}]},
    ]


def _answer_file(path, messages, valid=True, method_kind="cot", final_answer="F"):
    data = {"win": valid, "answer_generation": {
        "valid_data": valid, "final_answer": final_answer, "function": [{"name": "f_for_t"}], "query": "the query",
        "train_messages": [messages] if valid else [], "chain": [], "query_count": 1, "total_tokens": 1}}
    if method_kind == "cot":
        data.update({"try_count": 1, "trys": [], "compare_candidates": [], "forward_args": {}})
    path.write_text(json.dumps(data))
    return path


def _chain_of(details):
    node, out = details[0], []
    while True:
        out.append((node["role"], node["message"]))
        if not node["next"]:
            return out
        node = node["next"][0]


def test_new_tool_calls_style_with_null_function_call_converts(tmp_path):
    path = _answer_file(tmp_path / "5_CoT@1.json", _messages_new_style())
    answer = load_answer(path)
    assert answer.message_style == STYLE_TOOL_CALLS
    converted = Converter("CoT@1").convert(answer)
    chain = _chain_of(converted["answer"]["answer_details"])
    assert chain == [
        ("system", ""), ("user", ""),
        ("tool", {"name": "f_for_t", "arguments": "{\"x\": 1}", "response": "resp-a"}),  # matched by call id
        ("tool", {"name": "g_for_t", "arguments": "{}", "response": "resp-b"}),
        ("assistant", "plain words"),
        ("tool", {"name": "Finish", "arguments": "{\"return_type\": \"give_answer\", \"final_answer\": \"42\"}",
                  "response": ""}),  # calls after Finish are dropped
    ]
    assert converted["answer"]["total_steps"] == 6


def test_old_style_null_function_call_does_not_crash(tmp_path):
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                {"role": "assistant", "content": None, "function_call": {"name": "f_for_t", "arguments": "{}"}},
                {"role": "function", "name": "f_for_t", "content": "obs"},
                {"role": "assistant", "content": "done", "function_call": None}]
    converted = Converter("CoT@1").convert(load_answer(_answer_file(tmp_path / "6_CoT@1.json", messages)))
    assert _chain_of(converted["answer"]["answer_details"])[2:] == [
        ("tool", {"name": "f_for_t", "arguments": "{}", "response": "obs"}), ("assistant", "done")]


def _invalid_cot(path, n_trys):
    chain = lambda i: [{"node_type": "Action", "description": f"tool_{i}"},  # noqa: E731
                       {"node_type": "Action Input", "description": f"{{\"i\": {i}}}", "observation": f"obs {i}"}]
    data = {"win": False, "try_count": n_trys, "trys": [{"chain": chain(i), "win": False} for i in range(n_trys)],
            "compare_candidates": [], "forward_args": {},
            "answer_generation": {"valid_data": False, "final_answer": "", "function": [], "query": "q",
                                  "train_messages": [], "chain": []}}
    path.write_text(json.dumps(data))


def test_invalid_cot_fallback_follows_the_shared_rng_across_files(tmp_path):
    """Every earlier conversion draws once per step, so it moves the try an invalid answer falls back to."""
    _invalid_cot(tmp_path / "2_CoT@1.json", 5)
    valid = _answer_file(tmp_path / "1_CoT@1.json", _messages_new_style())
    alone = convert_folder(tmp_path, "CoT@1", order="name", order_from=None)
    # expected try: replay the draws upstream makes: file 1 walks system->user->4 steps (5 draws of one
    # successor), then file 2 draws its try
    rng = random.Random(42)
    for _ in range(5):
        rng.choice([0])
    expected = rng.choice(range(5))
    assert expected != random.Random(42).choice(range(5))  # so the file order visibly matters
    assert alone["2"]["answer"]["answer_details"][0]["next"][0]["next"][0]["message"]["name"] == f"tool_{expected}"
    valid.unlink()  # without the earlier file the RNG is fresh: seed 42's first draw over five tries
    fresh = convert_folder(tmp_path, "CoT@1")
    assert fresh["2"]["answer"]["answer_details"][0]["next"][0]["next"][0]["message"]["name"] == \
        f"tool_{random.Random(42).choice(range(5))}"
    assert fresh["2"]["answer"]["total_steps"] == 3


def test_invalid_dfs_answers_random_walk_to_a_leaf(tb_root, tmp_path):
    folder = tmp_path / "G1"
    shutil.copytree(tb_root / "data_example" / "answer" / "G1_answer", folder)
    first = convert_folder(folder, "DFS_woFilter_w2")
    again = convert_folder(folder, "DFS_woFilter_w2")
    assert first == again  # seeded
    walk = _chain_of(first["69"]["answer"]["answer_details"])
    assert walk[:2] == [("system", ""), ("user", "")] and len(walk) == first["69"]["answer"]["total_steps"]
    assert {role for role, _ in walk[2:]} <= {"tool", "assistant"}
    other_seed = [convert_folder(folder, "DFS_woFilter_w2", seed=s)["69"]["answer"]["total_steps"] for s in range(8)]
    assert len(set(other_seed)) > 1  # the walk really is random


def test_malformed_answer_file_names_file_and_field(tmp_path):
    bad = tmp_path / "3_CoT@1.json"
    bad.write_text(json.dumps({"answer_generation": {"valid_data": "yes"}}))
    with pytest.raises(InputError) as err:
        load_answer(bad)
    assert err.value.path == str(bad) and err.value.field == "answer_generation.valid_data"
    (tmp_path / "4_CoT@1.json").write_text("{not json")
    assert main(["convert", "--answers", str(tmp_path), "--method", "CoT", "--out", str(tmp_path / "o.json")]) == 2
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize(("root", "folder", "method", "plugin"), [
    ("stb_root", "virtual_chatgpt_cot/G1_instruction", "CoT@1", "Toy@1"),
    ("tb_root", "G1_answer", "DFS_woFilter_w2", "Beam@2"),  # StableToolBench's DFS example has no invalid answer
])
def test_a_method_named_neither_cot_nor_dfs_falls_back_by_the_files_shape(request, tmp_path, root, folder, method,
                                                                          plugin):
    """A plug-in search method's invalid answers: trys walked as CoT's, a tree as DFS's (was: refused, the
    fallback came from "CoT" / "DFS" in the method's name only). The same files convert the same."""
    released = request.getfixturevalue(root) / "data_example" / "answer" / folder
    renamed = tmp_path / "G1_instruction"
    renamed.mkdir()
    for path in released.glob("*.json"):
        shutil.copy(path, renamed / path.name.replace(method, plugin))
    ours, theirs = convert_folder(renamed, plugin), convert_folder(released, method)
    assert any(not load_answer(p).valid for p in released.glob("*.json"))  # a fallback is taken
    for entry in ours.values():
        assert entry["answer"].pop("method") == plugin
    for entry in theirs.values():
        entry["answer"].pop("method")
    assert ours == theirs


def test_convert_refuses_a_method_no_file_has_and_writes_nothing(tmp_path, capsys):
    answers = tmp_path / "G1_instruction"
    answers.mkdir()
    _invalid_cot(answers / "2_CoT@1.json", 2)
    _invalid_cot(answers / "3_DFS_woFilter_w2.json", 2)
    out = tmp_path / "converted.json"
    assert main(["convert", "--answers", str(answers), "--method", "BOGUS", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--method" in err and "BOGUS" in err and "CoT@1" in err and "DFS_woFilter_w2" in err
    assert not out.exists()  # never an empty {} file
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["convert", "--answers", str(empty), "--method", "CoT@1", "--out", str(out)]) == 2
    assert "no .json answer files" in capsys.readouterr().err and not out.exists()


@pytest.mark.parametrize("blocked", ["file-in-the-way", "folder-at-the-name", "proc"])
def test_convert_to_an_unwritable_path_is_exit_2_naming_it(tmp_path, capsys, blocked):
    answers = tmp_path / "G1_instruction"
    answers.mkdir()
    _invalid_cot(answers / "2_CoT@1.json", 2)
    if blocked == "file-in-the-way":
        (tmp_path / "out").write_text("a file")
        out = tmp_path / "out" / "G1_instruction.json"
    elif blocked == "folder-at-the-name":
        out = tmp_path / "G1_instruction.json"
        out.mkdir()
    else:  # read-only place (chmod does not stop root, /proc does)
        out = "/proc/self/tba/G1_instruction.json"
    assert main(["convert", "--answers", str(answers), "--method", "CoT@1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out) in err or str(Path(out).parent) in err  # the file or the folder that cannot be written
    assert "fix:" in err and "Traceback" not in err


def test_query_ids_come_from_the_file_or_its_name_in_any_layout(tmp_path):
    """Fork layouts: the id is the last number before the method; answer_generation.query_id wins when there."""
    run = tmp_path / "outputs"
    (run / "A_G2_instruction_toolllama-2").mkdir(parents=True)
    _invalid_cot(run / "A_G2_instruction_toolllama-2" / "x_G2_instruction_toolllama-2_81506_CoT@1.json", 1)
    (run / "G1_answer").mkdir()
    _invalid_cot(run / "G1_answer" / "69_ChatGPT_CoT@1.json", 1)
    _invalid_cot(run / "G1_answer" / "named_CoT@1.json", 1)
    data = json.loads((run / "G1_answer" / "named_CoT@1.json").read_text())
    data["answer_generation"]["query_id"] = 4242
    (run / "G1_answer" / "named_CoT@1.json").write_text(json.dumps(data))
    converted = convert_folder(run, "CoT@1")  # no *.json of its own: every file below it
    assert sorted(converted) == ["4242", "69", "81506"]
    assert sorted(convert_folder([run / "G1_answer" / "69_ChatGPT_CoT@1.json"], "CoT@1")) == ["69"]


def test_a_file_without_a_query_id_or_a_repeated_id_is_an_input_error(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    _invalid_cot(tmp_path / "a" / "notes_CoT@1.json", 1)
    with pytest.raises(InputError, match="no query id in the file name or the file"):
        convert_folder(tmp_path / "a", "CoT@1")
    for run in ("r1", "r2"):
        (tmp_path / run).mkdir()
        _invalid_cot(tmp_path / run / "7_CoT@1.json", 1)
    out = tmp_path / "converted.json"
    assert main(["convert", "--answers", str(tmp_path / "r1"), str(tmp_path / "r2"), "--method", "CoT@1",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "query id 7 is answered twice" in err and "r1" in err and "r2" in err and not out.exists()
