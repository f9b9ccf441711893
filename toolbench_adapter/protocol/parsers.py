"""Markup that model outputs carry around tool calls, outside the ToolLLaMA ReAct protocol."""

# end-of-turn tokens that leak into generated text when a serving stack does not strip them:
# toolbench/tool_conversation.py (ToolLLaMA sep2, also protocol.react.STOP); Qwen2 chat template
# (tokenizer_config.json of Qwen/Qwen2-7B-Instruct); Llama 3.1 chat template (meta-llama/Llama-3.1-8B-Instruct);
# GPT-2 style <|endoftext|> (Qwen base models)
END_OF_TURN_TOKENS = ("</s>", "<|im_end|>", "<|eot_id|>", "<|endoftext|>")

# Hermes 2 Pro / Qwen2.5 tool-call tags (NousResearch Hermes-2-Pro chat template; vLLM hermes_tool_parser.py)
HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
