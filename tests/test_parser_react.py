"""ReAct parsers: react-find bug for bug (reference §3.5, peers §2.1), react-regex, react-robust on real texts."""

from __future__ import annotations

import json

import pytest

from toolbench_adapter.parsers import ErrorKind, Rung, get_parser
from toolbench_adapter.parsers.react_find import react_find_slices

FIND = get_parser("react-find")
REGEX = get_parser("react-regex")
ROBUST = get_parser("react-robust")

FINISH_MULTILINE = 'Thought: t\nAction: Finish\nAction Input: {\n  "return_type": "give_answer",\n  "final_answer": "done"\n}'


# ---- react-find: every worked example of stabletoolbench.md §3.5, slice for slice

@pytest.mark.parametrize(("text", "thought", "action", "action_input"), [
    ('Thought: I will search.\nAction: search_for_tool\nAction Input: {"q": "x"}',
     "I will search.", "search_for_tool", '{"q": "x"}'),
    ('I will search.\nAction: search_for_tool\nAction Input: {"q": "x"}',
     "earch.", "search_for_tool", '{"q": "x"}'),
    ("Thought: The answer is 42.", "The answer is 42", ": The answer is 42", "answer is 42."),
    ('Thought: t\nAction:search_for_tool\nAction Input:{"q": 1}',
     't\nAction:search_for_tool\nAction Input:{"q": 1', ': t\nAction:search_for_tool\nAction Input:{"q": 1',
     'tion:search_for_tool\nAction Input:{"q": 1}'),
    ('Thought: t\nAction: get_x\nAction Input: {"q": "x"}\nObservation: {"a": 1}',
     "t", "get_x", '{"q": "x"}\nObservation: {"a": 1}'),
    (FINISH_MULTILINE, "t", "Finish", '{\n  "return_type": "give_answer",\n  "final_answer": "done"\n}'),
])
def test_react_find_reproduces_the_reference_examples(text, thought, action, action_input):
    assert react_find_slices(text) == (thought, action, action_input)
    turn = FIND.parse(text)
    assert (turn.thought, turn.calls[0].name, turn.calls[0].arguments_raw) == (thought, action, action_input)


# peers.md §2.1 table, column "find (StableToolBench)": (action, action_input)
@pytest.mark.parametrize(("text", "action", "action_input"), [
    ('Thought: t\nAction: get_x\nAction Input: {"a": 1}', "get_x", '{"a": 1}'),
    ("Thought: t\nAction: Finish", "Finis", "tion: Finish"),
    ("The answer is 42.", "wer is 42", " 42."),
    ('Thought: t\nAction: get_x\nAction Input: {"a": 1}\nObservation: fake', "get_x", '{"a": 1}\nObservation: fake'),
    ('Thought: t\nAction: get_x\nAction Input: {"a": 1}\nThought: u\nAction: get_y\nAction Input: {"b": 2}',
     "get_x", '{"a": 1}\nThought: u\nAction: get_y\nAction Input: {"b": 2}'),
    ('Thought: the Action: word\nAction: get_x\nAction Input: {}', "word\nAction: get_x", "{}"),
    ("Thought: t\r\nAction: get_x\r\nAction Input: {}\r\n", "get_x\r", "{}\r\n"),
    ("Action: \nAction Input: {}", "", "{}"),
])
def test_react_find_reproduces_the_peer_table(text, action, action_input):
    call = FIND.parse(text).calls[0]
    assert (call.name, call.arguments_raw) == (action, action_input)


def test_react_find_classifies_without_touching_the_slices():
    assert FIND.parse("Thought: The answer is 42.").error is ErrorKind.NO_ACTION
    assert FIND.parse("Thought: t\nAction: Finish").error is ErrorKind.NO_ACTION_INPUT
    assert FIND.parse("Action: \nAction Input: {}").error is ErrorKind.EMPTY_ACTION
    crlf = FIND.parse("Thought: t\r\nAction: get_x\r\nAction Input: {}\r\n")
    assert crlf.error is ErrorKind.NAME_WHITESPACE and crlf.calls[0].arguments == {}
    obs = FIND.parse('Thought: t\nAction: get_x\nAction Input: {"a": 1}\nObservation: fake')
    assert obs.error is ErrorKind.HALLUCINATED_OBSERVATION and obs.calls[0].arguments is None
    assert FIND.parse("").error is ErrorKind.EMPTY_OUTPUT


def test_react_find_finish_and_lenient_rung():
    turn = FIND.parse(FINISH_MULTILINE)
    assert turn.final_answer == "done" and turn.rung is Rung.STRICT and turn.error is ErrorKind.NONE
    raw_newline = FIND.parse('Thought: t\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "a\nb"}')
    assert raw_newline.rung is Rung.LENIENT and raw_newline.final_answer == "a\nb"
    assert raw_newline.error is ErrorKind.CONTROL_CHARACTERS


# ---- react-regex: what the legacy regex costs

def test_react_regex_cuts_multiline_and_nested_json():
    multi = REGEX.parse(FINISH_MULTILINE)
    assert multi.calls[0].arguments is None and multi.error is ErrorKind.INVALID_JSON
    nested = REGEX.parse('Thought: t\nAction: get_x\nAction Input: {"a": {"b": 1}, "c": 2}')
    assert nested.calls[0].arguments_raw == '{"a": {"b": 1}'
    assert nested.error is ErrorKind.TRUNCATED_JSON
    flat = REGEX.parse('Thought: t\nAction: get_x\nAction Input: {"a": 1}\nObservation: x')
    assert flat.calls[0].arguments == {"a": 1} and flat.error is ErrorKind.NONE


# ---- react-robust on constructed edge cases

@pytest.mark.parametrize(("text", "name", "arguments", "kind"), [
    ('Thought: t\nAction:get_x\nAction Input:{"q": 1}', "get_x", {"q": 1}, ErrorKind.NONE),
    ('Thought: t\r\nAction: get_x \r\nAction Input: {"q": 1}\r\n', "get_x", {"q": 1}, ErrorKind.NONE),
    ('I will search.\nAction: get_x\nAction Input: {"q": 1}', "get_x", {"q": 1}, ErrorKind.NONE),
    ('Thought: t\nAction: get_x\nAction Input: {"q": 1}\nObservation: {"a": 1}', "get_x", {"q": 1},
     ErrorKind.HALLUCINATED_OBSERVATION),
    ('Thought: t\nAction: get_x\nAction Input: {"q": 1}\nThought: u\nAction: get_y\nAction Input: {}', "get_x",
     {"q": 1}, ErrorKind.MULTIPLE_ACTIONS),
    ('Thought: t\nAction: get_x\nAction Input: {"q": 1} I hope this helps', "get_x", {"q": 1}, ErrorKind.TRAILING_TEXT),
    ('Thought: the Action: word\nAction: get_x\nAction Input: {}', "get_x", {}, ErrorKind.NONE),
    ("Thought: t\nAction: get_x\nAction Input: {'q': 'it\\'s'}", "get_x", {"q": "it's"}, ErrorKind.PYTHON_LITERAL),
])
def test_react_robust_edge_cases(text, name, arguments, kind):
    turn = ROBUST.parse(text)
    assert [(c.name, c.arguments) for c in turn.calls] == [(name, arguments)]
    assert turn.error is kind


def test_react_robust_no_action_and_empty_action_give_no_call():
    assert ROBUST.parse("Thought: The answer is 42.").calls == []
    assert ROBUST.parse("Thought: The answer is 42.").error is ErrorKind.NO_ACTION
    empty = ROBUST.parse("Thought: t\nAction: \nAction Input: {}")
    assert empty.calls == [] and empty.error is ErrorKind.EMPTY_ACTION


def test_react_robust_finish_final_answer():
    turn = ROBUST.parse('Thought: t\nAction: Finish\nAction Input: {"return_type":"give_answer","final_answer":"42"}')
    assert turn.final_answer == "42" and turn.calls[0].name == "Finish"


# ---- real model outputs (fixtures/react_outputs_dev.jsonl), picked by their notes

@pytest.fixture(scope="module")
def dev_records(fixtures_root):
    with open(fixtures_root / "react_outputs_dev.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def _texts(records, notes_prefix):
    texts = [r["text"] for r in records if r["notes"].startswith(notes_prefix)]
    assert texts, f"no fixture with notes {notes_prefix!r}"
    return texts


def test_fixture_well_formed_texts_parse_cleanly(dev_records):
    clean = [r["text"] for r in dev_records if not r["notes"].startswith(("MALFORMED", "NO_ACTION_BY_DESIGN"))]
    turns = [ROBUST.parse(t) for t in clean]
    parsed = sum(1 for t in turns if t.calls and t.calls[0].arguments is not None)
    assert parsed == len(clean)  # every well-formed text yields a call with dict arguments
    assert all(t.error is ErrorKind.NONE for t in turns)  # incl. leaked <|im_end|> / <|eot_id|> tokens


def test_fixture_truncated_json(dev_records):
    text = _texts(dev_records, "MALFORMED[truncated_json]")[0]
    assert FIND.parse(text).error is ErrorKind.TRUNCATED_JSON
    turn = ROBUST.parse(text)
    assert turn.error is ErrorKind.TRUNCATED_JSON
    assert turn.calls[0].name == "Finish" and turn.calls[0].arguments["return_type"] == "give_answer"
    assert turn.rung is Rung.REPAIR and turn.final_answer  # the cut answer is still recovered


def test_fixture_hallucinated_observation_before_the_action(dev_records):
    for text in _texts(dev_records, "MALFORMED[hallucinated_observation]"):
        find, robust = FIND.parse(text), ROBUST.parse(text)
        assert robust.error is ErrorKind.HALLUCINATED_OBSERVATION
        assert robust.calls[0].arguments is not None
        # react-find sees nothing wrong: the Function line sits in its thought slice
        assert find.error is ErrorKind.NONE and find.calls[0].arguments == robust.calls[0].arguments


def test_fixture_multiple_actions_recovers_the_real_call(dev_records):
    text = _texts(dev_records, "MALFORMED[multiple_actions,truncated_json]")[0]
    find, robust = FIND.parse(text), ROBUST.parse(text)
    assert find.calls[0].name == "" and find.error is ErrorKind.EMPTY_ACTION  # start after end: empty slice
    assert robust.error is ErrorKind.MULTIPLE_ACTIONS
    assert robust.calls[0].name == "get_address_transaction_webhook_for_address_monitor"
    assert robust.calls[0].arguments == {"transactionid": "4753498e-5ee1-45b2-a18c-a7ef3c9f71cd"}


def test_fixture_odd_action_line_then_real_action(dev_records):
    text = _texts(dev_records, "MALFORMED[invalid_function_name,multiple_actions,odd_action_name]")[0]
    find, robust = FIND.parse(text), ROBUST.parse(text)
    assert "\nAction: " in find.calls[0].name  # upstream glues both Action lines into the name
    assert robust.calls[0].name == "about_info_free_for_bulk_whatsapp_validator"
    assert robust.error is ErrorKind.MULTIPLE_ACTIONS


def test_fixture_empty_action(dev_records):
    text = _texts(dev_records, "MALFORMED[empty_action,missing_action_input]")[0]
    assert ROBUST.parse(text).error is ErrorKind.EMPTY_ACTION and ROBUST.parse(text).calls == []


def test_fixture_missing_action_input(dev_records):
    text = _texts(dev_records, "MALFORMED[missing_action_input,odd_action_name]")[0]
    for parser in (FIND, ROBUST):
        turn = parser.parse(text)
        assert turn.error is ErrorKind.NO_ACTION_INPUT
        assert turn.calls[0].arguments is None
    assert ROBUST.parse(text).calls[0].name.startswith("Use the")


def test_fixture_missing_action(dev_records):
    text = _texts(dev_records, "MALFORMED[invalid_function_name,missing_action]")[0]
    assert FIND.parse(text).error is ErrorKind.NO_ACTION and FIND.parse(text).calls  # upstream still steps
    assert ROBUST.parse(text).error is ErrorKind.NO_ACTION and not ROBUST.parse(text).calls


def test_fixture_invalid_json_comment_is_repaired(dev_records):
    text = next(t for t in _texts(dev_records, "MALFORMED[invalid_json]") if "//" in t)
    assert FIND.parse(text).calls[0].arguments is None
    turn = ROBUST.parse(text)
    assert turn.error is ErrorKind.INVALID_JSON and turn.rung is Rung.REPAIR
    assert turn.calls[0].arguments == {"is_id": "1234"}


def test_fixture_missing_thought_label(dev_records):
    text = _texts(dev_records, "MALFORMED[missing_thought_label]")[0]
    find, robust = FIND.parse(text), ROBUST.parse(text)
    assert robust.error is ErrorKind.NONE and robust.calls[0].name == "Finish"
    assert robust.thought and find.thought != robust.thought  # find lost the first 8 chars of the thought region
