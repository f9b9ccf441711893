"""Adversarial outputs: every parser answers with an error kind, never an exception or a crash kind.

These texts once cost minutes (the key-value rung rescanning escaped quotes from every quote, the legacy
Action Input regex rescanning a line from every label, hermes rescanning the text per block) or crashed
(react-robust on deep nesting). Speed is measured by benchmarks/bench_parsers_adversarial.py, not here.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbench_adapter.parsers import ErrorKind, decode_json, get_parser, parser_names
from toolbench_adapter.parsers.hermes import _NextTag
from toolbench_adapter.parsers.limits import MAX_PARSE_CHARS
from toolbench_adapter.parsers.react_regex import legacy_action_input
from toolbench_adapter.protocol.react import LEGACY_ACTION_INPUT_REGEX

SIZE = 256_000


def _repeat(unit: str, head: str = "") -> str:
    return head + unit * ((SIZE - len(head)) // len(unit))


FAMILIES = {
    "escaped-quotes": _repeat('\\"', head='Thought: t\nAction: get\nAction Input: {"'),  # issue 12's text
    "deep-nesting": _repeat('{"a": [', head="Action: get\nAction Input: "),
    "deep-nesting-closed": "Action: get\nAction Input: " + "[" * 50_000 + "]" * 50_000 + " tail",
    "open-braces-one-line": _repeat("Action Input: {", head="Action: get\n"),
    "unclosed-strings": _repeat('"k', head="Action: get\nAction Input: {"),
    "hermes-blocks": _repeat("<tool_call>{}"),
    "json-tags": _repeat("<tools_call>{", head="<think>"),
    "python-literal": _repeat("1, ", head="Action: get\nAction Input: {'a': ["),
    "key-value": _repeat('"k": "v", ', head='Action: get\nAction Input: {') + '"last": "\\"' * 1000,
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_parser_answers_adversarial_text_with_an_error_kind(family):
    text = FAMILIES[family]
    for name in parser_names():
        turn = get_parser(name).parse(text)
        assert isinstance(turn.error, ErrorKind), (name, family)
        assert turn.error is not ErrorKind.PARSER_CRASH, (name, family, turn.details)
    value, _rung, kind = decode_json(text)
    assert isinstance(kind, ErrorKind)


def test_the_key_value_rung_still_reads_pairs_among_escaped_quotes():
    value, rung, _ = decode_json('{"a": "x\\"y", "b": 2, "c": "' + '\\"' * 100_000)
    assert value == {"a": 'x"y', "b": 2} and rung is not None and rung.value == "key_value"


def test_a_text_over_the_limit_is_refused_with_its_own_kind():
    text = "Action: get\nAction Input: {}" + " " * MAX_PARSE_CHARS
    for name in parser_names():
        turn = get_parser(name).parse(text)
        assert turn.error is ErrorKind.INPUT_TOO_LARGE and turn.calls == [], name
        assert str(MAX_PARSE_CHARS) in turn.details[0]
    assert get_parser("react-robust").parse(text[:MAX_PARSE_CHARS]).error is not ErrorKind.INPUT_TOO_LARGE


# ---- the linear rewrites give exactly what the originals gave

LEGACY = re.compile(LEGACY_ACTION_INPUT_REGEX)
REACT_BITS = st.sampled_from(["Action Input:", "Action Input: ", "{", "}", "\n", " ", "\t", "a", '"', "\u00a0"])


@settings(max_examples=1000, deadline=None)
@given(st.lists(REACT_BITS, max_size=25).map("".join))
def test_legacy_action_input_equals_the_upstream_regex(text):
    match = LEGACY.search(text)
    assert legacy_action_input(text) == (match.group(1) if match else None)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "x", " "]), max_size=20).map("".join),
       st.lists(st.integers(0, 200), max_size=20))
def test_memoised_tag_search_equals_str_find(text, positions):
    finder = _NextTag(text, "</tool_call>")
    for position in sorted(positions) + positions:  # mostly growing, as the parser asks, then any order
        assert finder.find(position) == text.find("</tool_call>", position)
