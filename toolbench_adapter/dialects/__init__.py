"""Prompt dialects, registered by name; each pairs a rendering with its default parser."""

from .base import DIALECTS, Dialect, Rendered, for_backend

DIALECTS.register("toolllama", "toolbench_adapter.dialects.toolllama:ToolLLaMADialect")
DIALECTS.register("openai-tools", "toolbench_adapter.dialects.chat:OpenAIToolsDialect")
DIALECTS.register("json-object", "toolbench_adapter.dialects.chat:JsonObjectDialect")
DIALECTS.register("jsonl", "toolbench_adapter.dialects.chat:JsonlDialect")
DIALECTS.register("hermes", "toolbench_adapter.dialects.chat:HermesDialect")


def make_dialect(name: str, **options) -> Dialect:
    cls = DIALECTS.get(name)
    return cls(options=options) if options else cls()


__all__ = ["DIALECTS", "Dialect", "Rendered", "for_backend", "make_dialect"]
