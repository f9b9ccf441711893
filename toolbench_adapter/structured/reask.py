"""The message that asks a model again after an invalid reply (--on-invalid reask:N; not upstream).

It names what was wrong (the violations, as the validator words them), then the exact format the dialect
expects, the functions that may be called and, for each function the violations name, its parameters.
"""

from __future__ import annotations

import json

from toolbench_adapter.queryset.toolset import Toolset

from ..parsers.schema import Violation
from ..parsers.upstream_schema import argument_schemas
from ..protocol.parsers import HERMES_CLOSE, HERMES_OPEN
from ..protocol.react import ACTION_INPUT_MARKER, ACTION_MARKER, THOUGHT_MARKER

FORMATS = {
    "toolllama": f"{THOUGHT_MARKER}<your thought, one line>\n{ACTION_MARKER}<one function name from the list>\n"
                 f"{ACTION_INPUT_MARKER}<its arguments as one JSON object>",
    "json-object": '{"think": "<your reasoning>", "action": "<one function name from the list>", '
                   '"arguments": {<its arguments>}}',
    "jsonl": '{"name": "<one function name from the list>", "parameters": {<its arguments>}}  (one line per call)',
    "hermes": f'{HERMES_OPEN}\n{{"name": "<one function name from the list>", "arguments": {{<its arguments>}}}}\n'
              f'{HERMES_CLOSE}',
    "openai-tools": "one tool call of a function from the list, with arguments that fit its parameters",
}
MAX_VIOLATIONS_SHOWN = 5


def parameters_line(name: str, schema: dict) -> str:
    """``get_x takes {"city": string (required), "units": string}``."""
    required = set(schema.get("required") or [])
    parts = []
    for parameter, spec in (schema.get("properties") or {}).items():
        kind = spec.get("type") or ("one of " + json.dumps(spec["enum"]) if "enum" in spec else "any value")
        if "enum" in spec and "type" in spec:
            kind = f"{kind}, one of {json.dumps(spec['enum'], ensure_ascii=False)}"
        parts.append(f"{json.dumps(parameter)}: {kind}" + (" (required)" if parameter in required else ""))
    return f"{name} takes {{{', '.join(parts)}}}" if parts else f"{name} takes {{}} (no arguments)"


def reask_message(violations: list[Violation], dialect: str, toolset: Toolset) -> str:
    schemas = argument_schemas(toolset.functions)
    shown = [f"- {v.text()}" for v in violations[:MAX_VIOLATIONS_SHOWN]]
    if len(violations) > MAX_VIOLATIONS_SHOWN:
        shown.append(f"- and {len(violations) - MAX_VIOLATIONS_SHOWN} more")
    named = [v.function for v in violations if v.function in schemas]
    lines = ["Your last reply could not be used:", *shown,
             "Reply again, in exactly this format:", FORMATS.get(dialect, FORMATS["openai-tools"]),
             "Functions you can call: " + ", ".join(schemas) + "."]
    lines += [parameters_line(name, schemas[name]) for name in dict.fromkeys(named)]
    return "\n".join(lines)
