"""Output parsers: raw model output in, ``ParsedTurn`` out, never an exception.

Built-in variants are registered here lazily ("module:attr", imported on first use). A third party adds
a parser without editing the project through the entry point group ``toolbench_adapter.parsers``::

    [options.entry_points]
    toolbench_adapter.parsers =
        my-format = my_package.my_module:MyParser

The entry must name a class with a ``name`` attribute and a ``parse(text) -> ParsedTurn`` method;
``get_parser(name)`` instantiates it with no arguments.
"""

from __future__ import annotations

from .base import PARSERS, Call, ErrorKind, ParsedTurn, Parser, Rung
from .finish import FinishArgs, parse_finish
from .ladder import decode_json, find_json_object_end

_BUILTINS = {
    "react-find": "toolbench_adapter.parsers.react_find:ReactFindParser",
    "react-regex": "toolbench_adapter.parsers.react_regex:ReactRegexParser",
    "react-robust": "toolbench_adapter.parsers.react_robust:ReactRobustParser",
    "json-object": "toolbench_adapter.parsers.json_object:JsonObjectParser",
    "fenced-json": "toolbench_adapter.parsers.fenced_json:FencedJsonParser",
    "jsonl": "toolbench_adapter.parsers.jsonl:JsonlParser",
    "hermes": "toolbench_adapter.parsers.hermes:HermesParser",
    "openai-tools": "toolbench_adapter.parsers.openai_tools:OpenAIToolsParser",
}
for _name, _target in _BUILTINS.items():
    PARSERS.register(_name, _target)


def get_parser(name: str) -> Parser:
    """A ready parser instance by registered name (raises UnknownNameError with "did you mean")."""
    return PARSERS.get(name)()


def parser_names() -> list[str]:
    return PARSERS.names()


__all__ = [
    "PARSERS", "Call", "ErrorKind", "FinishArgs", "ParsedTurn", "Parser", "Rung",
    "decode_json", "find_json_object_end", "get_parser", "parse_finish", "parser_names",
]
