"""The ToolLLaMA prompt and the chat dialects' payloads."""

import json

import pytest

from toolbench_adapter.dialects import make_dialect
from toolbench_adapter.errors import InputError
from toolbench_adapter.messages import diversity_message, initial_messages, process_system_message
from toolbench_adapter.parsers.base import ParsedTurn
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset


@pytest.fixture()
def toolset(stb_root):
    return build_toolset(QuerySet(stb_root).get("G1_instruction", 1073), "current")


def test_toolllama_first_prompt_exact(toolset):
    messages = initial_messages(toolset)
    prompt = make_dialect("toolllama").render(messages, toolset).prompt
    inner = [t["function"] for t in toolset.functions]
    system = messages[0]["content"].replace(
        "with a function call to actually excute your step.",
        "with a function call to actually excute your step. Your output should follow this format:\n"
        "Thought:\nAction\nAction Input:\n")
    system += "\nSpecifically, you have access to the following APIs: " + repr(inner)
    expected = "System: " + system + "\n" + "User: " + messages[1]["content"] + "\n" + "Assistant:\n"
    assert prompt == expected
    # python repr: single quotes, and the current flavour's leading "" is visible to the model
    assert "'required': ['', 'q']" in prompt
    assert prompt.endswith("\nBegin!\n\nAssistant:\n")


def test_toolllama_history_raw_vs_thought(toolset):
    raw = 'Thought: look it up\nAction: querykeywords_for_keyword_analysis\nAction Input: {"q": "x"}'
    parsed = ParsedTurn(parser="react-find", thought="look it up")
    obs = '{"error": "", "response": "ok"}'
    for history, shown in (("raw", raw), ("thought", "look it up")):
        dialect = make_dialect("toolllama", history=history)
        content = dialect.assistant_content(raw, parsed)
        messages = initial_messages(toolset) + [
            {"role": "assistant", "content": content, "tool_calls": []},
            {"role": "tool", "name": "querykeywords_for_keyword_analysis", "content": obs, "tool_call_id": "c"},
        ]
        prompt = dialect.render(messages, toolset).prompt
        assert prompt.endswith(f"Assistant: {shown}\nFunction: {obs}\nAssistant:\n")


def test_toolllama_keeps_invalid_diversity_messages_openai_drops_them(toolset):
    messages = initial_messages(toolset) + [{**diversity_message([{"name": "a"}], "obs"), "valid": False}]
    text = make_dialect("toolllama").render(messages, toolset).prompt
    assert "This is not the first time you try this task" in text
    assert "again, your former observation: obs\n" in text
    chat = make_dialect("openai-tools").render(messages, toolset)
    assert len(chat.messages) == 2 and all("valid" not in m for m in chat.messages)
    assert chat.tools == toolset.openai_tools


def test_openai_tools_never_mutates_history(toolset):
    messages = initial_messages(toolset) + [
        {"role": "assistant", "content": None, "function_call": None, "tool_calls": [{"id": "1"}]}]
    before = json.dumps(messages)
    rendered = make_dialect("openai-tools").render(messages, toolset)
    assert "function_call" not in rendered.messages[-1]
    assert json.dumps(messages) == before


def test_chat_template_option_and_prefill(toolset):
    dialect = make_dialect("toolllama", template="chat", prefill="Thought: ", example=True)
    rendered = dialect.render(initial_messages(toolset), toolset)
    assert rendered.prompt is None and rendered.prefill == "Thought: "
    (message,) = rendered.messages
    assert message["role"] == "user" and "Example of the format" in message["content"]
    # the example follows the first user turn, so later turns see the real history after it
    assert message["content"].index("Example of the format") > message["content"].index("Begin!")
    assert message["content"].endswith('ships stay."}\nAssistant:\n')  # the example's Finish, then the prompt
    assert make_dialect("toolllama", stop_at_next_step=True).render(
        initial_messages(toolset), toolset).stop == ["</s>", "\nThought:", "\nObservation:", "\nFunction:"]
    with pytest.raises(InputError, match="history='everything' is not 'raw' or 'thought'"):  # exit 2, not a traceback
        make_dialect("toolllama", history="everything")


@pytest.mark.parametrize("name,role", [("json-object", "user"), ("jsonl", "user"), ("hermes", "tool")])
def test_text_chat_dialects_send_pure_json_observations(toolset, name, role):
    obs = '{"error": "", "response": {"a": 1}}'
    messages = initial_messages(toolset) + [
        {"role": "assistant", "content": "raw text", "tool_calls": [{"id": "1"}]},
        {"role": "tool", "name": "x", "content": obs, "tool_call_id": "1"}]
    rendered = make_dialect(name).render(messages, toolset)
    assert rendered.messages[-1] == {"role": role, "content": obs}
    assert rendered.messages[-2] == {"role": "assistant", "content": "raw text"}
    assert '"name": "Finish"' in rendered.messages[0]["content"]


def test_process_system_message_requires_anchor():
    with pytest.raises(ValueError):
        process_system_message("no anchor here", [])
