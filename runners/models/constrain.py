"""Constrained decoding per backend: what each one does with ``request.extra["constraint"]``.

- hf: an xgrammar logits processor (the reply's EBNF, or its JSON schema, compiled once per grammar against the
  model's tokenizer; xgrammar caches compiled grammars, up to CACHE_LIMIT_BYTES).
- OpenAI-compatible endpoints, by what the server offers (backend option ``structured``, default auto: read from
  GET /models, whose ``owned_by`` is "vllm" on vLLM and "openai"/"system" on OpenAI's API):
  - vllm: ``structured_outputs: {"grammar": EBNF}`` (vLLM's structured outputs, 0.10 and later; its xgrammar
    backend reads the same EBNF the hf backend compiles) or ``{"json": schema}`` for a schema only; also
    ``tba serve-model`` over a backend that can constrain (its GET /models entries list ``structured_outputs``);
  - openai: ``response_format: {"type": "json_schema", ...}`` in OpenAI's strict form: only replies that are one
    JSON object (the json-object dialect, the judge's verdict). Strict mode wants every property listed as
    required, so an optional parameter becomes nullable (a model may then write null where the function's
    schema has no null: the validator counts that as wrong_type);
  - none: cannot constrain (refused before any query runs).
A backend declares ``constraint_support(dialect) -> None | reason``; one without it cannot constrain.
"""

from __future__ import annotations

import threading
from typing import Any

from toolbench_adapter.errors import OptionError
from toolbench_adapter.structured.grammar import INSTALL_FIX, Constraint, schema_text

VLLM, OPENAI, NONE, AUTO = "vllm", "openai", "none", "auto"
FLAVOURS = (AUTO, VLLM, OPENAI, NONE)
OPENAI_OWNERS = {"openai", "system", "openai-internal"}
OPENAI_JSON_FORMATS = ("json-object", "judge")  # what OpenAI's response_format can express


# ---------------------------------------------------------------- hf

_COMPILERS: dict[int, Any] = {}
_COMPILERS_LOCK = threading.Lock()
# xgrammar keeps every compiled grammar unless told otherwise (cache_limit_bytes=-1): a query's grammar compiled
# against SmolLM2's 49k-token vocabulary takes ~3.9 MB, so a full StableToolBench run (1,100 queries) would hold
# ~4 GB. Least recently used grammars go past this limit (xgrammar may exceed it by about one grammar); a query
# compiles its grammar once and reuses it on every turn, so ~65 grammars in memory lose nothing.
CACHE_LIMIT_BYTES = 256 * 1024 * 1024


def hf_support() -> str | None:
    try:
        import xgrammar  # noqa: F401
    except ImportError:
        return f"xgrammar is not installed: {INSTALL_FIX}"
    return None


def _compiler(model, tokenizer):
    import xgrammar as xgr

    key = id(tokenizer)
    with _COMPILERS_LOCK:
        if key not in _COMPILERS:
            vocab = getattr(getattr(model, "config", None), "vocab_size", None)
            info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=vocab)
            _COMPILERS[key] = new_compiler(info)
        return _COMPILERS[key]


def new_compiler(info, cache_limit_bytes: int = CACHE_LIMIT_BYTES):
    """One xgrammar GrammarCompiler for a tokenizer, its cache of compiled grammars bounded."""
    import xgrammar as xgr

    return xgr.GrammarCompiler(info, max_threads=1, cache_limit_bytes=cache_limit_bytes)


def compiled(constraint: Constraint, model, tokenizer):
    compiler = _compiler(model, tokenizer)
    if constraint.ebnf is not None:
        return compiler.compile_grammar(constraint.ebnf)
    return compiler.compile_json_schema(schema_text(constraint.json_schema), any_whitespace=False)


def hf_logits_processors(constraint: Constraint | None, model, tokenizer) -> list | None:
    """A fresh logits processor for one generate() call (xgrammar's keeps per-call state), or None."""
    if constraint is None:
        return None
    from xgrammar.contrib.hf import LogitsProcessor

    return [LogitsProcessor(compiled(constraint, model, tokenizer))]


# ---------------------------------------------------------------- OpenAI-compatible endpoints

def flavour_option(value: str) -> str:
    """--backend-option structured=auto|vllm|openai|none, checked."""
    if value not in FLAVOURS:
        raise OptionError(f"backend option structured={value!r} is not one of {', '.join(FLAVOURS)} (auto: from "
                          "GET /models)", setting="backend_options", key="structured", example="vllm")
    return value


def flavour_of(option: str, endpoint) -> str:
    """The structured-output fields an endpoint takes: the option, or (auto) what GET /models said."""
    if option != AUTO:
        return option
    owners = {owner for owned in getattr(endpoint, "owners", {}).values() for owner in owned}
    if owners and owners <= {"vllm"}:
        return VLLM
    if says_structured_outputs(getattr(endpoint, "entries", {})):  # tba serve-model takes vLLM's fields
        return VLLM
    if owners and owners <= OPENAI_OWNERS:
        return OPENAI
    return NONE


def says_structured_outputs(entries: dict[str, dict[str, dict]]) -> bool:
    """Every endpoint's GET /models entries say they decode vLLM's structured_outputs (tba serve-model lists
    ``structured_outputs`` beside a model that can be constrained)."""
    return bool(entries) and all(
        listed and all(entry.get("structured_outputs") for entry in listed.values()) for listed in entries.values())


def endpoint_support(flavour: str, dialect: str, backend_name: str, endpoint) -> str | None:
    if flavour == VLLM:
        return None
    owners = sorted({o for owned in getattr(endpoint, "owners", {}).values() for o in owned}) or ["unknown"]
    if flavour == OPENAI:
        if dialect in OPENAI_JSON_FORMATS and backend_name == "openai-chat":
            return None
        return (f"OpenAI's response_format can only constrain a reply that is one JSON object (the json-object "
                f"dialect over openai-chat), not the {dialect} dialect over {backend_name}")
    return (f"the endpoint {getattr(endpoint, 'base_url', '?')} does not say it takes structured-output fields "
            f"(GET /models owned_by: {', '.join(owners)}; vLLM says vllm, OpenAI's API openai or system); "
            "if it is vLLM behind a proxy, pass --backend-option structured=vllm")


def openai_strict(schema: dict) -> dict:
    """A JSON schema in the form OpenAI's strict mode takes: objects closed, every property required (optional
    ones nullable), const as a one-value enum, no length or pattern keywords."""
    if not isinstance(schema, dict):
        return schema
    out = {k: v for k, v in schema.items() if k not in ("minLength", "maxLength", "pattern", "const", "description")}
    if "const" in schema:
        out["enum"] = [schema["const"]]
    if "properties" in schema:
        required = set(schema.get("required") or [])
        properties = {}
        for name, sub in schema["properties"].items():
            sub = openai_strict(sub)
            if name not in required:
                declared = sub.get("type")
                if isinstance(declared, str):
                    sub = {**sub, "type": [declared, "null"]}
                elif isinstance(declared, list) and "null" not in declared:
                    sub = {**sub, "type": [*declared, "null"]}
            properties[name] = sub
        out.update(type="object", properties=properties, required=list(properties), additionalProperties=False)
    elif out.get("type") == "object":
        out.update(properties={}, required=[], additionalProperties=False)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            out["anyOf"] = [openai_strict(sub) for sub in schema[key]]
            out.pop("oneOf", None)
    if "items" in schema:
        out["items"] = openai_strict(schema["items"])
    return out


def openai_reply_schema(constraint: Constraint) -> dict:
    """OpenAI wants an object at the root, never anyOf: a json-object reply becomes one object whose action is
    an enum of the names and whose arguments are any function's (a final "answer" goes through Finish)."""
    schema = constraint.json_schema or {}
    branches = schema.get("anyOf")
    if not branches:
        return openai_strict(schema)
    calls = [b for b in branches if "action" in b.get("properties", {})]
    return openai_strict({
        "type": "object", "required": ["think", "action", "arguments"],
        "properties": {"think": {"type": "string"},
                       "action": {"type": "string", "enum": [b["properties"]["action"]["const"] for b in calls]},
                       "arguments": {"anyOf": [b["properties"]["arguments"] for b in calls]}}})


def body_fields(constraint: Constraint | None, flavour: str) -> dict:
    """The request-body fields that constrain one request on an endpoint of this flavour."""
    if constraint is None:
        return {}
    if flavour == VLLM:
        if constraint.ebnf is not None:
            return {"structured_outputs": {"grammar": constraint.ebnf}}
        return {"structured_outputs": {"json": constraint.json_schema}}
    if flavour == OPENAI and constraint.json_schema is not None:
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": constraint.name.replace("-", "_"), "schema": openai_reply_schema(constraint), "strict": True}}}
    raise ValueError(f"an endpoint of flavour {flavour!r} cannot constrain a {constraint.name} reply")
