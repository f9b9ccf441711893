"""Property tests: no parser raises on any text; rendered calls parse back; JSONL chunking is invisible."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from toolbench_adapter.parsers import Call, ErrorKind, decode_json, get_parser, parse_finish, parser_names
from toolbench_adapter.parsers.jsonl import JsonlStreamParser
from toolbench_adapter.parsers.render import PARSER_FOR_FORMAT, render

PARSERS = [get_parser(name) for name in parser_names()]

# text rich in the characters and markers the parsers react to
MARKUP = st.sampled_from([
    "Thought: ", "Action: ", "Action Input: ", "\nAction: ", "\nAction Input: ", "Observation: ", "Function:",
    "{", "}", "[", "]", '"', "'", "\\", ":", ",", "\n", "\r\n", "<tool_call>", "</tool_call>", "```json",
    "```", '"name": ', '"arguments": ', '"return_type": "', "give_answer", "Finish", '"final_answer": "',
    "<answer>", "<|im_end|>", "null", "true", "1", " ",
])
TEXT = st.lists(st.one_of(MARKUP, st.text(max_size=8)), max_size=30).map("".join)


@settings(max_examples=1000, deadline=None)
@given(TEXT)
def test_no_parser_raises_on_arbitrary_text(text):
    for parser in PARSERS:
        turn = parser.parse(text)
        assert turn.parser == parser.name
        assert turn.error is not ErrorKind.PARSER_CRASH, turn.details  # the catch-all is never the normal path
        json.dumps(turn.to_json())  # always serialisable for `tba parse`
    decode_json(text)
    parse_finish(text)
    parse_finish(text, "robust")


# ---- round trip: a call rendered in a format parses back to the same call

NAMES = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", min_size=1, max_size=40).filter(
    lambda n: n != "Finish")
KEYS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**9, 10**9),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(KEYS, inner, max_size=3)), max_leaves=8)
ARGUMENTS = st.dictionaries(KEYS, VALUES, max_size=5)
THOUGHTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=60).filter(
    lambda t: "<tool_call>" not in t and "Action" not in t and "{" not in t and "```" not in t)


FORMATS = ("react", "json-object", "jsonl", "hermes")


@settings(max_examples=1000, deadline=None)
@given(NAMES, ARGUMENTS, THOUGHTS)
def test_rendered_call_parses_back_in_every_format(name, arguments, thought):
    for format_name in FORMATS:
        raw = json.dumps(arguments) if format_name == "react" else ""
        call = Call(name=name, arguments_raw=raw, arguments=arguments)
        text = render(format_name, thought, [call])
        turn = get_parser(PARSER_FOR_FORMAT[format_name]).parse(text)
        assert [(c.name, c.arguments) for c in turn.calls] == [(name, arguments)], (format_name, text)
        assert turn.error is ErrorKind.NONE, (format_name, text, turn.details)
        if format_name == "react":
            assert turn.calls[0].arguments_raw == raw  # history text survives verbatim


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=80), st.sampled_from(["react", "json-object", "jsonl", "hermes"]))
def test_final_answer_round_trip(answer, format_name):
    text = render(format_name, "done", [], final_answer=answer)
    assert get_parser(PARSER_FOR_FORMAT[format_name]).parse(text).final_answer == answer


# ---- JSONL: any chunking gives the batch result, calls surface as lines complete

JSONL_LINES = st.lists(st.one_of(
    st.builds(lambda n, a: json.dumps({"name": n, "parameters": a}), NAMES, st.dictionaries(KEYS, SCALARS, max_size=3)),
    st.just('{"error": "boom"}'), st.just("garbage"), st.just(""), st.just('{"name": "x"}'),
), max_size=6)


@settings(max_examples=1000, deadline=None)
@given(JSONL_LINES, st.data())
def test_jsonl_stream_equals_batch_for_any_chunking(lines, data):
    text = "\n".join(lines)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=8)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    stream = JsonlStreamParser()
    streamed = []
    for chunk in chunks:
        streamed.extend(stream.feed(chunk))
    turn = stream.close()
    batch = get_parser("jsonl").parse(text)
    assert turn.to_json() == batch.to_json() and turn.details == batch.details
    # every call but one on an unterminated last line was handed out before close()
    assert len(streamed) in (len(batch.calls), len(batch.calls) - 1)
