"""Where the report marks a parse as failed inside the raw model output."""

import pytest

from toolbench_adapter.parsers import get_parser
from toolbench_adapter.report.parse_spans import parse_spans
from toolbench_adapter.report.trajectories import answer_nodes, attach_records, parse_view


def marked(text, parser):
    turn = get_parser(parser).parse(text)
    return turn.error.value, [(kind, text[start:end]) for start, end, kind in parse_spans(text, turn)]


@pytest.mark.parametrize("parser", ["react-find", "react-robust"])
def test_hallucinated_observation_is_cut_after_the_arguments(parser):
    text = 'Thought: look\nAction: get_x\nAction Input: {"a": 1}\nObservation: {"r": 2}\nThought: done'
    error, spans = marked(text, parser)
    assert error == "hallucinated_observation"
    assert ("name", "get_x") in spans and ("args", '{"a": 1}') in spans
    cut = [part for kind, part in spans if kind == "cut"]
    assert cut == ['Observation: {"r": 2}\nThought: done']


def test_invalid_json_marks_the_position_where_decoding_failed():
    text = 'Thought: call\nAction: get_x\nAction Input: {"a": 1, "b": }'
    error, spans = marked(text, "react-find")
    assert error == "invalid_json"
    assert spans[-2:] == [("args", '{"a": 1, "b": '), ("bad", "}")]


def test_json_cut_at_the_end_is_marked_from_where_it_broke():
    text = 'Thought: call\nAction: get_x\nAction Input: {"a": "unfinished'
    error, spans = marked(text, "react-robust")
    assert error == "truncated_json"
    assert spans[-1] == ("bad", '"unfinished')


def test_trailing_text_after_the_object_is_cut():
    text = 'Thought: ok\nAction: get_x\nAction Input: {"a": 1} and then more'
    for parser in ("react-find", "react-robust"):
        error, spans = marked(text, parser)
        assert error == "trailing_text"
        assert spans[-1] == ("cut", "and then more")


def test_output_without_a_call_is_missed_whole_even_when_find_slices_garbage():
    text = "I do not know what to do"
    for parser in ("react-find", "react-robust"):
        error, spans = marked(text, parser)
        assert error == "no_action"
        assert spans == [("miss", text)]


def test_clean_output_has_no_error_marks():
    text = 'Thought: ok\nAction: get_x\nAction Input: {"a": 1}'
    error, spans = marked(text, "react-robust")
    assert error == "none"
    assert {kind for kind, _ in spans} == {"name", "args"}


def test_spans_are_sorted_and_disjoint_on_a_messy_output():
    text = 'Action: a\nAction Input: {"x": 1}\nAction: b\nAction Input: {"y": \nObservation: z'
    turn = get_parser("react-robust").parse(text)
    spans = parse_spans(text, turn)
    assert spans == sorted(spans)
    assert all(end <= nxt for (_, end, _), (nxt, _, _) in zip(spans, spans[1:], strict=False))
    assert parse_view(text, turn)["sp"] == [list(s) for s in spans]


def tree(*children):
    return {"tree": {"size": 0, "tree": {"node_type": "Action Input", "description": "", "depth": 0,
                                         "children": list(children)}}}


def node(kind, description, depth, *children, **extra):
    return {"node_type": kind, "description": description, "depth": depth, "children": list(children), **extra}


def test_records_follow_tree_order_across_dfs_branches():
    first = node("Thought", "t1", 1, node("Action", "f", 2, node("Action Input", "{}", 3, observation_code=0)))
    second = node("Thought", "t2", 1, node("Action", "g", 2, node("Action Input", "{}", 3, observation_code=6)))
    nodes = answer_nodes(tree(first, second))
    assert [n["t"] for n in nodes] == ["T", "A", "I", "T", "A", "I"]
    records = [{"step": 3, "call": "f", "status": 0, "error": "none"},
               {"step": 3, "call": "g", "status": 6, "error": "trailing_text"}]
    assert attach_records(nodes, records) == 2
    assert nodes[2]["rec"]["s"] == 0 and nodes[5]["rec"] == {"e": "trailing_text", "s": 6}


def test_an_output_over_the_parse_limit_is_missed_whole():
    from toolbench_adapter.parsers.limits import MAX_PARSE_CHARS

    text = 'Thought: x\nAction: a\nAction Input: {"q": "' + "y" * MAX_PARSE_CHARS + '"}'
    turn = get_parser("react-robust").parse(text)
    assert turn.error.value == "input_too_large"
    assert parse_spans(text, turn) == [(0, len(text), "miss")]
