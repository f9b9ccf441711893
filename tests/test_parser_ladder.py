"""The JSON ladder, brace matching and Finish-argument parsing (upstream heuristic and robust)."""

from __future__ import annotations

import pytest

from toolbench_adapter.parsers import ErrorKind, Rung, decode_json, find_json_object_end, parse_finish
from toolbench_adapter.protocol.functions import GIVE_ANSWER, GIVE_UP


@pytest.mark.parametrize(("text", "value", "rung", "kind"), [
    ('{"q": "x"}', {"q": "x"}, Rung.STRICT, ErrorKind.NONE),
    ('{"q": "x"}\nObservation: {"a": 1}', {"q": "x"}, Rung.RAW_DECODE, ErrorKind.TRAILING_TEXT),
    ('Sure, here: {"a": {"b": "}"}} done', {"a": {"b": "}"}}, Rung.BRACE_MATCH, ErrorKind.TRAILING_TEXT),
    ('{"a": "line1\nline2"}', {"a": "line1\nline2"}, Rung.LENIENT, ErrorKind.CONTROL_CHARACTERS),
    ("{'city': 'Paris', 'ok': True}", {"city": "Paris", "ok": True}, Rung.PYTHON_LITERAL, ErrorKind.PYTHON_LITERAL),
    ('{"city": "Par', {"city": "Par"}, Rung.REPAIR, ErrorKind.TRUNCATED_JSON),
    ('{city: "Paris"}', {"city": "Paris"}, Rung.REPAIR, ErrorKind.INVALID_JSON),
    ('"x": 1, "y": "z', {"x": 1}, Rung.KEY_VALUE, ErrorKind.INVALID_JSON),
])
def test_each_rung_of_the_ladder(text, value, rung, kind):
    assert decode_json(text) == (value, rung, kind)


@pytest.mark.parametrize(("text", "kind"), [("", ErrorKind.EMPTY_OUTPUT), ("   ", ErrorKind.EMPTY_OUTPUT),
                                            ("I will search now", ErrorKind.INVALID_JSON)])
def test_nothing_decodable(text, kind):
    assert decode_json(text) == (None, None, kind)


def test_prose_number_is_not_taken_for_json():
    # past the strict rung only containers count: "42 apples" is not the JSON the model meant
    assert decode_json("42 apples")[0] is None
    assert decode_json("42") == (42, Rung.STRICT, ErrorKind.NONE)


@pytest.mark.parametrize(("text", "end"), [
    ("{}", 2),
    ('{"a": "}"} tail', 10),
    ('{"a": "\\"}"} tail', 12),  # an escaped quote does not close the string
    ('{"a": {"b": 1}} x', 15),
    ("{'a': \"it's\"} t", 13),
    ('{"a": {"b": 1}', None),
    ('{"a": "unclosed', None),
])
def test_find_json_object_end(text, end):
    assert find_json_object_end(text, 0) == end


def test_find_json_object_end_needs_an_opening_brace():
    assert find_json_object_end("x{}", 0) is None
    assert find_json_object_end("x{}", 1) == 3


# ---- Finish: upstream (rapidapi_wrapper._step, reference §5.1)

def test_upstream_finish_json_branch_with_raw_newlines():
    args = parse_finish('{"return_type": "give_answer", "final_answer": "a\nb"}')
    assert (args.return_type, args.final_answer, args.method) == (GIVE_ANSWER, "a\nb", "json")


def test_upstream_finish_heuristic_keeps_the_junk_after_the_answer():
    raw = '{"return_type": "give_answer", "final_answer": "He said "hi"."}'
    args = parse_finish(raw)
    assert (args.return_type, args.final_answer, args.method) == (GIVE_ANSWER, 'He said "hi"."}', "heuristic")


def test_upstream_finish_heuristic_give_up_and_other_values():
    assert parse_finish('{"return_type": "give_up_and_restart" oops').return_type == GIVE_UP
    # other value: marker .. first '",'; without '",' find() is -1 and the slice drops the last char
    assert parse_finish('{"return_type": "maybe", "x": 1 oops').return_type == "maybe"
    assert parse_finish('{"return_type": "maybe oops').return_type == "maybe oop"


def test_upstream_finish_needs_exactly_one_space():
    args = parse_finish('{"return_type":"give_answer","final_answer":"x" junk')
    assert (args.return_type, args.final_answer, args.method) == (None, None, "none")
    single = parse_finish("{'return_type': 'give_answer', 'final_answer': 'x'}")
    assert single.return_type is None


def test_upstream_finish_presence_of_non_string_values_is_kept():
    # upstream only checks the key: a null answer still gives status 3, a null type "not a valid choice"
    args = parse_finish('{"return_type": null, "final_answer": null}')
    assert (args.return_type, args.final_answer) == ("null", "null")


def test_upstream_finish_truncated_answer():
    args = parse_finish('{\n  "return_type": "give_answer",\n  "final_answer": "The weather is')
    assert (args.return_type, args.final_answer) == (GIVE_ANSWER, "The weather is")


@pytest.mark.parametrize(("raw", "method"), [
    ('{"return_type":"give_answer","final_answer":"x"}', "strict"),
    ("{'return_type': 'give_answer', 'final_answer': 'x'}", "python_literal"),
    ('{"return_type": "give_answer", "final_answer": "x', "repair"),
])
def test_robust_finish_accepts_no_space_single_quotes_truncation(raw, method):
    args = parse_finish(raw, "robust")
    assert (args.return_type, args.final_answer, args.method) == (GIVE_ANSWER, "x", method)


def test_robust_finish_regex_fallback_and_nothing():
    args = parse_finish("return_type: 'give_up_and_restart' ... 'return_type' : 'give_up_and_restart'", "robust")
    assert (args.return_type, args.method) == (GIVE_UP, "heuristic")
    assert parse_finish("no idea", "robust").method == "none"


def test_unknown_finish_variant_is_a_programming_error():
    with pytest.raises(ValueError, match="upstream, robust"):
        parse_finish("{}", "fancy")
