"""ToolLLaMA ReAct text protocol: markers, roles, stop strings."""

# toolbench/inference/utils.py (react_parser): the find() markers, offsets = len(marker)
THOUGHT_MARKER = "Thought: "
ACTION_MARKER = "Action: "
ACTION_INPUT_MARKER = "Action Input: "
ACTION_END = "\nAction: "  # end of the thought slice
ACTION_INPUT_END = "\nAction Input: "  # end of the action slice

# toolbench/inference/utils.py (older regex extraction, replaced by find-based parsing upstream)
LEGACY_ACTION_INPUT_REGEX = r"Action Input:\s*(\{.*?\})"

# toolbench/tool_conversation.py (template "tool-llama-single-round"): roles and separators
ROLE_SYSTEM = "System"
ROLE_USER = "User"
ROLE_FUNCTION = "Function"
ROLE_ASSISTANT = "Assistant"
# toolbench/inference/LLM/tool_llama_model.py: OpenAI role -> ToolLLaMA role
ROLE_MAP = {
    "system": ROLE_SYSTEM,
    "user": ROLE_USER,
    "function": ROLE_FUNCTION,
    "tool": ROLE_FUNCTION,
    "assistant": ROLE_ASSISTANT,
}
TURN_TEMPLATE = "{role}: {content}\n"
GENERATION_PROMPT = "Assistant:\n"  # closes every inference prompt (no space before the newline)
STOP = "</s>"  # toolbench/tool_conversation.py sep2 / tool_llama_vllm_model.py stop

# toolbench/inference/LLM/tool_llama_vllm_model.py
VLLM_TRUNCATE_PROMPT_TOKENS = 7168
CONTEXT_TOKENS = 8192
TOO_LONG_CONTENT = "The response is too long, please try again.\nOrignal response: "
# same file: the forced give-up call that replaces a too-long response (id is the integer 0 upstream)
TOO_LONG_TOOL_CALL_ID = 0
TOO_LONG_GIVE_UP_ARGUMENTS = '{"return_type": "give_up_and_restart"}'
# toolbench/inference/LLM/tool_llama_model.py: prompt ids left-truncated to 8192 - 1024 - 8
HF_PROMPT_TOKEN_LIMIT = 8192 - 1024 - 8

# toolbench/inference/LLM/tool_llama_model.py: tool call ids ("call_" + 8 random alnum for HF)
TOOL_CALL_ID_PREFIX = "call_"
TOOL_CALL_ID_LENGTH = 8
