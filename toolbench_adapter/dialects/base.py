"""A dialect pairs prompt rendering with a default parser.

Conversation history is stored in one canonical shape whatever the dialect (the upstream "current"
answer-file messages): system, user, assistant {content, tool_calls}, tool {name, content, tool_call_id}.
A dialect renders that history into what its backend receives (a text prompt or chat messages) and
decides what an assistant turn stores as content (the raw generation, or the thought only).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from toolbench_adapter.queryset.toolset import Toolset

from ..errors import OptionError
from ..parsers.base import ParsedTurn
from ..registry import Registry


@dataclass
class Rendered:
    prompt: str | None = None  # completion-style backends
    messages: list[dict] | None = None  # chat-style backends
    tools: list[dict] | None = None  # native tools (openai-tools only)
    stop: list[str] = field(default_factory=list)
    prefill: str = ""  # text the backend appends to the prompt and returns in front of its output


@dataclass(frozen=True)
class DialectOption:
    """One option a dialect reads: its type (str, bool, int, float), default and, where it has them, choices."""

    kind: type
    default: Any
    choices: tuple = ()


@dataclass
class Dialect(ABC):
    name: str = "base"
    default_parser: str = "react-find"
    options: dict[str, Any] = field(default_factory=dict)
    # the options this dialect reads; any other, or a value of the wrong type, is refused (OptionError, exit 2):
    # before, a dialect without checks recorded a typo in the manifest and ran without it
    OPTIONS: ClassVar[dict[str, DialectOption]] = {}

    def __post_init__(self) -> None:
        self.options = check_options(self.name, self.OPTIONS, self.options)

    @abstractmethod
    def render(self, messages: list[dict], toolset: Toolset) -> Rendered:
        """The history as the backend receives it."""

    def assistant_content(self, text: str | None, parsed: ParsedTurn) -> str | None:
        """What an assistant turn stores as content: the raw generation by default."""
        return text

    def sends(self) -> tuple[bool, bool]:
        """(chat messages?, native tools?): what render() hands the backend, so a run can refuse a backend
        that cannot take it before any query runs."""
        return True, False

    def describe(self) -> dict:
        return {"name": self.name, "default_parser": self.default_parser, **self.options}


def check_options(dialect: str, declared: dict[str, DialectOption], given: dict[str, Any]) -> dict[str, Any]:
    """``given`` typed against ``declared``, defaults filled in. Flags arrive as strings (true/false already
    booleans): a number option takes its digits; a config file's values must have the type already."""
    known = sorted(declared)
    unknown = sorted(set(given) - set(declared))
    if unknown:
        takes = f"known: {', '.join(known)}" if known else "it takes none"
        raise OptionError(f"the {dialect} dialect has no option {', '.join(map(repr, unknown))} ({takes})",
                          setting="dialect_options", key=unknown[0], known=known)
    options = {name: option.default for name, option in declared.items()}
    for name, value in given.items():
        option = declared[name]
        typed = _typed(option.kind, value)
        if typed is None or (option.choices and typed not in option.choices):
            want = (" or ".join(map(repr, option.choices)) if option.choices else
                    {bool: "true or false", int: "a whole number", float: "a number"}.get(option.kind, "text"))
            example = option.choices[0] if option.choices else option.default
            raise OptionError(f"{dialect} option {name}={value!r} is not {want}", setting="dialect_options",
                              key=name, example=example)
        options[name] = typed
    return options


def _typed(kind: type, value: Any) -> Any:
    """``value`` as ``kind``, or None where it is not one (True is no number, 1 no boolean)."""
    if kind is bool:
        return value if isinstance(value, bool) else None
    if kind in (int, float) and isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            return None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value if isinstance(value, kind) and not isinstance(value, bool) else None


def for_backend(messages: list[dict]) -> list[dict]:
    """Chat payload as upstream sends it: drop messages marked invalid, pop legacy function_call keys.
    Copies only: the stored history is never mutated."""
    out = []
    for message in messages:
        if message.get("valid") is False:
            continue
        clean = {k: v for k, v in message.items() if k not in ("valid", "function_call")}
        out.append(clean)
    return out


# name -> Dialect subclass or "module:attr"; entry point group toolbench_adapter.dialects
DIALECTS: Registry[type] = Registry("dialects")
