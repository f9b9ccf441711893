"""The grammar of a reply per dialect and function list, and what each kind of endpoint is sent."""

import json

import pytest

from runners.models.constrain import OPENAI, VLLM, body_fields, openai_reply_schema
from toolbench_adapter.errors import InputError
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.structured.grammar import CALL_OVERHEAD_TOKENS, THOUGHT_MAX_CHARS, reply_constraint, text_budget

xgr = pytest.importorskip("xgrammar", reason="the structured extra (xgrammar) is not installed")
from xgrammar.testing import _is_grammar_accept_string  # noqa: E402

GIVE_ANSWER = {"return_type": "give_answer", "final_answer": "x"}


@pytest.fixture(scope="module")
def toolset():
    return build_toolset(QuerySet(None).load("G1_instruction")[0], "current")


def accepts(constraint, text):
    return _is_grammar_accept_string(xgr.Grammar.from_ebnf(constraint.ebnf), text)


def test_toolllama_after_the_prefill(toolset):
    c = reply_constraint("toolllama", toolset, "Thought: ", max_tokens=64)
    first = toolset.names[0]  # current_conditions_for_skycast_lite_weather: city required, units optional
    assert accepts(c, f'I look.\nAction: {first}\nAction Input: {{"city": "Lisbon"}}')
    assert accepts(c, f'I look.\nAction: {first}\nAction Input: {{"city": "Lisbon", "units": "metric"}}')
    assert not accepts(c, f'I look.\nAction: {first}\nAction Input: {{"units": "metric"}}')  # city is required
    assert not accepts(c, f'I look.\nAction: {first}\nAction Input: {{"city": 5}}')  # a string
    assert not accepts(c, f'I look.\nAction: {first}\nAction Input: {{"city": "L", "q": 1}}')  # undeclared
    assert not accepts(c, 'I look.\nAction: get_weather\nAction Input: {}')  # not a listed function
    assert not accepts(c, "two\nlines\nAction: Finish\nAction Input: {}")
    assert not accepts(c, "x" * (THOUGHT_MAX_CHARS + 1) + f"\nAction: Finish\nAction Input: {json.dumps(GIVE_ANSWER)}")
    # Finish: give_answer carries a non-empty final answer of at most max_tokens characters
    assert accepts(c, f"Done.\nAction: Finish\nAction Input: {json.dumps(GIVE_ANSWER)}")
    assert accepts(c, 'Done.\nAction: Finish\nAction Input: {"return_type": "give_up_and_restart"}')
    assert not accepts(c, 'Done.\nAction: Finish\nAction Input: {"return_type": "give_answer"}')
    too_long = {"return_type": "give_answer", "final_answer": "y" * 65}
    assert not accepts(c, f"Done.\nAction: Finish\nAction Input: {json.dumps(too_long)}")


def test_free_text_fits_the_turns_token_budget(toolset):
    """Thought and final answer together leave the call's own tokens room under max_tokens, so a model that
    repeats itself at one character per token still closes the call (a cut reply is an invalid turn)."""
    budget = text_budget(256)
    assert budget.thought + budget.answer + CALL_OVERHEAD_TOKENS <= 256 and budget.answer >= 128
    assert text_budget(None).answer is None and text_budget(None).thought == THOUGHT_MAX_CHARS
    c = reply_constraint("toolllama", toolset, "Thought: ", max_tokens=256)
    finish = 'Action: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "%s"}'
    assert accepts(c, "t" * budget.thought + "\n" + finish % ("y" * budget.answer))
    assert not accepts(c, "t" * (budget.thought + 1) + "\n" + finish % "y")
    assert not accepts(c, "t\n" + finish % ("y" * (budget.answer + 1)))
    obj = reply_constraint("json-object", toolset, max_tokens=256)
    assert accepts(obj, json.dumps({"think": "t" * budget.thought, "answer": "y" * budget.answer}))
    assert not accepts(obj, json.dumps({"think": "t" * (budget.thought + 1), "answer": "y"}))
    assert not accepts(obj, json.dumps({"think": "t", "answer": "y" * (budget.answer + 1)}))


def test_toolllama_without_a_prefill_writes_the_thought_marker(toolset):
    c = reply_constraint("toolllama", toolset, "")
    assert accepts(c, f"Thought: t\nAction: Finish\nAction Input: {json.dumps(GIVE_ANSWER)}")
    assert not accepts(c, f"t\nAction: Finish\nAction Input: {json.dumps(GIVE_ANSWER)}")


def test_a_prefill_the_format_cannot_follow_is_exit_2(toolset):
    with pytest.raises(InputError, match="prefill"):
        reply_constraint("toolllama", toolset, "Action: ")
    with pytest.raises(InputError, match="no grammar for the openai-tools dialect"):
        reply_constraint("openai-tools", toolset)


def test_json_object_jsonl_and_hermes(toolset):
    first = toolset.names[0]
    obj = reply_constraint("json-object", toolset)
    assert accepts(obj, json.dumps({"think": "t", "action": first, "arguments": {"city": "L"}}))
    assert accepts(obj, json.dumps({"think": "t", "answer": "a"}))
    assert not accepts(obj, json.dumps({"think": "t", "action": "nope", "arguments": {}}))
    assert obj.json_schema is not None  # one JSON object: OpenAI's response_format can carry it
    line = json.dumps({"name": first, "parameters": {"city": "L"}})
    finish = json.dumps({"name": "Finish", "parameters": GIVE_ANSWER, "call_id": "c1"})
    lines = reply_constraint("jsonl", toolset)
    assert accepts(lines, line) and accepts(lines, line + "\n" + finish)
    assert not accepts(lines, "\n".join([line] * 4)) and lines.json_schema is None
    block = "<tool_call>\n" + json.dumps({"name": first, "arguments": {"city": "L"}}) + "\n</tool_call>"
    hermes = reply_constraint("hermes", toolset)
    assert accepts(hermes, "I call it.\n" + block) and accepts(hermes, block + "\n" + block)
    assert not accepts(hermes, "I call nothing.")


def test_endpoint_fields(toolset):
    react = reply_constraint("toolllama", toolset, "Thought: ")
    assert body_fields(react, VLLM) == {"structured_outputs": {"grammar": react.ebnf}}
    assert body_fields(None, VLLM) == {}
    with pytest.raises(ValueError):
        body_fields(react, OPENAI)  # no JSON schema for ReAct text
    obj = reply_constraint("json-object", toolset)
    form = body_fields(obj, OPENAI)["response_format"]
    assert form["type"] == "json_schema" and form["json_schema"]["strict"] is True
    schema = openai_reply_schema(obj)
    assert schema["required"] == ["think", "action", "arguments"] and schema["additionalProperties"] is False
    city = schema["properties"]["arguments"]["anyOf"][0]
    assert city["required"] == list(city["properties"])  # strict: every property listed as required
    assert city["properties"]["units"]["type"] == ["string", "null"]  # optional: nullable


def test_the_hf_compilers_cache_of_grammars_is_bounded(monkeypatch):
    """xgrammar keeps every compiled grammar by default (~3.9 MB each for SmolLM2): ours evicts past a limit."""
    from runners.models import constrain

    info = xgr.TokenizerInfo([chr(c) for c in range(32, 127)] + ['{"', '":'])
    grammar = 'root ::= "call_{}(" [a-z]{{1,8}} ")"'.format
    alone = constrain.new_compiler(info, -1)
    alone.compile_grammar(grammar(0))
    one = alone.get_cache_size_bytes()  # one compiled grammar
    limit = 3 * one
    unbounded, bounded = constrain.new_compiler(info, -1), constrain.new_compiler(info, limit)
    sizes = []
    for i in range(60):  # 20 times what fits
        unbounded.compile_grammar(grammar(i))
        bounded.compile_grammar(grammar(i))
        sizes.append(bounded.get_cache_size_bytes())
    assert unbounded.get_cache_size_bytes() > 20 * limit / 2
    # xgrammar evicts the least recently used grammars; it may pass the limit by about one grammar
    assert max(sizes) <= limit + one
    # the backend's compiler is built with the project's limit
    monkeypatch.setattr(xgr.TokenizerInfo, "from_huggingface", staticmethod(lambda tokenizer, vocab_size=None: info))
    tokenizer = object()
    try:
        compiler = constrain._compiler(None, tokenizer)
        assert compiler.cache_limit_bytes == constrain.CACHE_LIMIT_BYTES == 256 * 1024 * 1024
    finally:
        constrain._COMPILERS.pop(id(tokenizer), None)
