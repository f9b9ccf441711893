"""Model backends, registered by name: openai-completions, openai-chat, hf, replay."""

from .base import BACKENDS, Backend, Completion, ModelRequest

BACKENDS.register("openai-completions", "runners.models.openai_completions:OpenAICompletionsBackend")
BACKENDS.register("openai-chat", "runners.models.openai_chat:OpenAIChatBackend")
BACKENDS.register("hf", "runners.models.hf:HFBackend")
BACKENDS.register("replay", "runners.models.replay:ReplayBackend")
BACKENDS.register("scripted", "runners.models.scripted:ScriptedBackend")
# an outside program over MCP (tba run --agent CMD): never asked for a completion (runners/outside/)
BACKENDS.register("agent", "runners.models.outside_agent:OutsideAgentBackend")

__all__ = ["BACKENDS", "Backend", "Completion", "ModelRequest"]
