"""StableToolBench function schemas -> valid JSON Schema (the one place their quirks are handled).

Upstream ``parameters`` objects (rapidapi_multithread.py: api_json_to_openai_json; reference §2.2, §14 item 5)
are close to JSON Schema but not quite; a validator (jsonschema) or a grammar compiler (xgrammar, vLLM, OpenAI's
strict mode) reads them only after this adapter:

- ``required`` (and the non-standard ``optional``) start with ``""`` in STB HEAD's current flavour: the empty
  name is dropped (a JSON Schema would otherwise demand a parameter called ""); ``optional`` is dropped (it is
  not a keyword: a parameter not in ``required`` is optional anyway), and so is every other key that is not a
  JSON Schema keyword (``example_value``).
- Types spelled as upstream's api_list spells them (``STRING``, ``NUMBER``, ``BOOLEAN``, ``ARRAY``, ``OBJECT``,
  ``INTEGER``, in any case) become the JSON Schema type of that name; the non-JSON ones (``ENUM``,
  ``DATE (YYYY-MM-DD)``, ``TIME (24-hour HH:MM)``, ``BINARY``, anything else) become ``string``, as upstream's
  own type map sends them. Function lists built by this project already carry JSON types (NUMBER is
  ``integer`` there, as upstream maps it): those are kept as they are.
- An ``enum`` whose values do not fit the declared type keeps the enum and drops the type (no value could
  satisfy both); a ``required`` or ``properties`` of the wrong shape is dropped.
- ``additionalProperties`` is left as the schema says (upstream never sets it: extra parameters are valid).

Nothing else changes: the adapted schema accepts exactly the arguments the model was shown as valid.
"""

from __future__ import annotations

from typing import Any

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
# the keywords kept (recursively adapted where they hold schemas); everything else is dropped
_KEPT = ("type", "description", "enum", "const", "properties", "required", "items", "additionalProperties",
         "anyOf", "oneOf", "allOf", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern")
_FITS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def json_type(spelled: Any) -> str:
    """An upstream type spelling as a JSON Schema type: JSON names in any case, the rest ``string``."""
    name = str(spelled).strip().lower()
    return name if name in JSON_TYPES else "string"


def to_json_schema(parameters: Any) -> dict:
    """A function's ``parameters`` as a valid JSON Schema for its arguments (always an object schema)."""
    if not isinstance(parameters, dict):
        return {"type": "object"}
    schema = _adapt(parameters)
    schema["type"] = "object"  # arguments are always a JSON object, whatever the declaration says
    return schema


def _adapt(spec: Any) -> dict:
    if not isinstance(spec, dict):
        return {}
    out: dict[str, Any] = {}
    for key in _KEPT:
        if key not in spec:
            continue
        value = spec[key]
        if key == "type":
            types = [json_type(t) for t in value] if isinstance(value, list) else json_type(value)
            out["type"] = list(dict.fromkeys(types)) if isinstance(types, list) else types
        elif key == "properties":
            if isinstance(value, dict):
                out["properties"] = {str(name): _adapt(sub) for name, sub in value.items() if str(name)}
        elif key == "required":
            if isinstance(value, list):
                out["required"] = list(dict.fromkeys(n for n in value if isinstance(n, str) and n))
        elif key == "items":
            out["items"] = _adapt(value)
        elif key in ("anyOf", "oneOf", "allOf"):
            if isinstance(value, list):
                out[key] = [_adapt(sub) for sub in value]
        elif key == "additionalProperties":
            out[key] = value if isinstance(value, bool) else _adapt(value)
        elif key == "enum":
            if isinstance(value, list) and value:
                out["enum"] = value
        elif key == "description":
            if isinstance(value, str):
                out[key] = value
        else:
            out[key] = value
    declared = out.get("type")
    if "enum" in out and declared is not None:
        types = declared if isinstance(declared, list) else [declared]
        if not all(any(_FITS[t](v) for t in types) for v in out["enum"]):
            del out["type"]
    return out


def function_entries(functions: list) -> list[dict]:
    """The bare function dicts of a list of plain functions or OpenAI tools ({"type": "function", ...})."""
    result = []
    for entry in functions or []:
        if isinstance(entry, dict) and isinstance(entry.get("function"), dict):
            entry = entry["function"]
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            result.append(entry)
    return result


def argument_schemas(functions: list) -> dict[str, dict]:
    """Function name -> the JSON Schema of its arguments, in list order (the first of a repeated name wins)."""
    schemas: dict[str, dict] = {}
    for function in function_entries(functions):
        schemas.setdefault(function["name"], to_json_schema(function.get("parameters")))
    return schemas
