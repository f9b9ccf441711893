"""The call recorder encodes each request once (call_record.RawJSON) and encode_record writes the step record: the
bytes must be those of json.dumps over the record holding the request as data, as the recorder wrote before
(it copied the request and the record was encoded whole), and decode_requests must give back every request."""

from __future__ import annotations

import copy
import json
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolbench_adapter.runs.call_record import CallRecorder, RawJSON, decode_requests, encode_record

JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
JSON = st.recursive(JSON_LEAVES, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)


def request(messages=None, prompt=None, tools=None, stop=(), prefill=None):
    return SimpleNamespace(prompt=prompt, messages=messages, tools=tools, stop=list(stop),
                           extra={"prefill": prefill} if prefill is not None else {})


def completion(text="ok", tool_calls=None):
    return SimpleNamespace(text=text, tool_calls=tool_calls)


def as_data(record: dict) -> dict:
    return {key: value.value() if isinstance(value, RawJSON) else value for key, value in record.items()}


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=10), JSON, max_size=6), st.lists(JSON, max_size=3))
def test_encode_record_writes_the_bytes_of_json_dumps(record, raw_values):
    for number, value in enumerate(raw_values):
        record[f"raw{number}"] = RawJSON(json.dumps(value))
    assert encode_record(record) == json.dumps(as_data(record))


def test_a_string_equal_to_the_mark_elsewhere_in_the_record_changes_nothing():
    from toolbench_adapter.runs.call_record import _MARK

    record = {"a": f"{_MARK}sent", "sent": RawJSON('{"kind": "text"}'), "b": [f"{_MARK}sent"]}
    assert encode_record(record) == json.dumps(as_data(record))


def test_json_dumps_refuses_a_raw_value_instead_of_quoting_it():
    with pytest.raises(TypeError):
        json.dumps({"sent": RawJSON("{}")})


def take(recorder: CallRecorder, req, done=None) -> dict:
    recorder.sent(req, done or completion())
    return recorder.take()


def test_requests_are_stored_as_changes_and_decode_back_even_when_the_history_is_edited_later():
    system = {"role": "system", "content": "S" * 5000}
    user = {"role": "user", "content": "task"}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    recorder = CallRecorder()
    history = [system, user]
    first = take(recorder, request(messages=list(history), tools=tools))
    assistant = {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]}
    history += [assistant, {"role": "tool", "content": "{}", "tool_call_id": "c1"}]
    sent_second = copy.deepcopy(history)
    second = take(recorder, request(messages=list(history), tools=tools),
                  completion(None, [{"id": "c2", "function": {"name": "Finish", "arguments": "{}"}}]))
    assistant["tool_calls"][0]["function"]["name"] = "renamed"  # edited after it was sent: the record keeps it
    assert json.loads(encode_record(first))["sent"] == {"kind": "messages", "shared": 0, "rest": [system, user],
                                                        "tools": tools, "stop": [], "prefill": None}
    assert json.loads(encode_record(second))["sent"] == {"kind": "messages", "shared": 2, "rest": sent_second[2:]}
    records = [json.loads(encode_record(r)) for r in (first, second)]
    decoded = decode_requests(records)
    assert [d["prompt"] for d in decoded] == [[system, user], sent_second]
    assert decoded[1]["output_tool_calls"] == [{"id": "c2", "function": {"name": "Finish", "arguments": "{}"}}]
    # a third request whose history was edited where the second one had it: shared stops before the edit
    third = take(recorder, request(messages=list(history), tools=tools))
    assert json.loads(encode_record(third))["sent"]["shared"] == 2


def test_text_prompts_and_parts_recorded_when_they_change():
    recorder = CallRecorder()
    first = json.loads(encode_record(take(recorder, request(prompt="abc", stop=["x"], prefill="T"))))
    second = json.loads(encode_record(take(recorder, request(prompt="abcdef", stop=["x"], prefill="U"))))
    assert first["sent"] == {"kind": "text", "shared": 0, "rest": "abc", "tools": None, "stop": ["x"], "prefill": "T"}
    assert second["sent"] == {"kind": "text", "shared": 3, "rest": "def", "prefill": "U"}
    assert [d["prompt"] for d in decode_requests([first, second])] == ["abc", "abcdef"]


def test_a_part_edited_in_place_after_it_was_sent_is_recorded_again():
    tools = [{"type": "function", "function": {"name": "f"}}]
    recorder = CallRecorder()
    take(recorder, request(messages=[], tools=tools))
    unchanged = json.loads(encode_record(take(recorder, request(messages=[], tools=tools))))["sent"]
    tools[0]["function"]["name"] = "g"  # the same list, edited: the recorder kept a copy to compare with
    edited = json.loads(encode_record(take(recorder, request(messages=[], tools=tools))))["sent"]
    assert "tools" not in unchanged and edited["tools"] == [{"type": "function", "function": {"name": "g"}}]
