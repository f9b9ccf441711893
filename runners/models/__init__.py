"""Model backends, registered by name: openai-completions, openai-chat, hf, replay."""

from .base import BACKENDS, Backend, Completion, ModelRequest

BACKENDS.register("openai-completions", "runners.models.openai_completions:OpenAICompletionsBackend")
BACKENDS.register("openai-chat", "runners.models.openai_chat:OpenAIChatBackend")
BACKENDS.register("hf", "runners.models.hf:HFBackend")
BACKENDS.register("replay", "runners.models.replay:ReplayBackend")
BACKENDS.register("scripted", "runners.models.scripted:ScriptedBackend")

__all__ = ["BACKENDS", "Backend", "Completion", "ModelRequest"]
