"""Evaluator folders (``config.yaml`` + ``template.txt``), read at run time: prompts and function schemas.

Works with upstream folders (``toolbench/tooleval/evaluators/tooleval_gpt-3.5-turbo_default``; nothing of them
is copied into the project) and with the project's own ``evaluators/default`` written in the same layout.
The template holds ``<function><name>…</name><description>…</description></function>`` blocks; a prompt is the
description text with ``str.format(**args)``, sent as one user message.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolbench_adapter.files.input_files import UnreadableFile, parse_yaml, read_text

from ..errors import InputError
from ..protocol.evaluation import (
    EVALUATOR_CONFIG_FILE,
    REASON_FIELD,
    REASON_PROPERTY,
    TEMPLATE_DESCRIPTION_RE,
    TEMPLATE_FUNCTION_RE,
    TEMPLATE_NAME_RE,
)

PROJECT_EVALUATORS = Path(__file__).resolve().parent / "evaluators"
DEFAULT_EVALUATOR = "default"


@dataclass
class EvaluatorSpec:
    name: str
    path: Path
    templates: dict[str, str]  # function name -> prompt text with {placeholders}
    functions: dict[str, dict]  # function name -> schema {"name", "description", "parameters"}
    temperature: float | None
    max_tokens: int | None
    fingerprint: str  # sha256 of config + template: part of every cache key

    def prompt(self, function: str, **args: str) -> str:
        try:
            return self.templates[function].format(**args)
        except KeyError as exc:
            raise InputError(f"template of {function!r} has an unknown placeholder {exc}", path=self.path,
                             fix="use only the placeholders the decision procedure fills ({query}, {answer})") from None

    def schema(self, function: str, with_reason: bool = True) -> dict:
        """The function schema; upstream adds a required ``reason`` string when it asks for reasons."""
        schema = copy.deepcopy(self.functions[function])
        if with_reason:
            parameters = schema.setdefault("parameters", {"type": "object", "properties": {}})
            parameters.setdefault("properties", {})[REASON_FIELD] = dict(REASON_PROPERTY)
            required = parameters.setdefault("required", [])
            if REASON_FIELD not in required:
                required.append(REASON_FIELD)
        return schema

    def require(self, *functions: str) -> None:
        for function in functions:
            if function not in self.templates or function not in self.functions:
                raise InputError(f"evaluator has no function {function!r} (template and config.yaml both need it)",
                                 path=self.path, fix="use an evaluator folder laid out like tooleval_gpt-3.5-turbo_default")


class _Function(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: Annotated[str, Field(strict=True, min_length=1)]


class _CompletionsKwargs(BaseModel):
    """What the judge sends from config.yaml's completions_kwargs, typed (strict: YAML's "0.2" is text); other
    keys (upstream's model, timeout, ...) are read by nothing here and pass."""

    model_config = ConfigDict(extra="allow")
    # the tops (issue 41): the same as --temperature's and --judge-max-tokens' (runners/config/limits.py)
    temperature: Annotated[float, Field(strict=True, ge=0, le=10, allow_inf_nan=False)] | None = None
    max_tokens: Annotated[int, Field(strict=True, ge=1, le=100_000)] | None = None
    functions: Annotated[list[_Function], Field(strict=True)] = []


# what each checked key takes, and a value that would do (upstream's own)
_KWARGS_FIX = {"temperature": ("a number of at least 0 and at most 10 (OpenAI's API takes at most 2; far below 10 "
                               "sampling is all but uniform noise)", "temperature: 0.2"),
               "max_tokens": ("a whole number of at least 1 and at most 100000 (a verdict is a few dozen tokens)",
                              "max_tokens: 1000"),
               "functions": ("a list of function objects, each with a name",
                             "- name: check_answer_status, with its description and parameters, as "
                             "toolbench_adapter/evaluation/evaluators/default/config.yaml writes them")}


def check_completions_kwargs(kwargs: Any, config_path: Path) -> dict[str, Any]:
    """config.yaml's completions_kwargs, checked before any judge is asked: InputError (exit 2) naming the file,
    the field and the fix. Before, ``temperature: hot`` went to the judge as is."""
    if kwargs is None:
        return {}
    if not isinstance(kwargs, dict):
        raise InputError(f"completions_kwargs must be a mapping (got {json.dumps(kwargs, default=str)})",
                         path=config_path, field="completions_kwargs",
                         fix="write it as keys under completions_kwargs:, e.g. max_tokens: 1000 and temperature: 0.2")
    try:
        _CompletionsKwargs.model_validate(kwargs)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = str(error["loc"][0])
        where = "completions_kwargs" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                                               for part in error["loc"])
        want, example = _KWARGS_FIX[key]
        got = json.dumps(error["input"], default=str, ensure_ascii=False)
        more = f" ({len(exc.errors()) - 1} more problem(s) after it)" if len(exc.errors()) > 1 else ""
        raise InputError(f"{key} must be {want} (got {got}){more}", path=config_path, field=where,
                         fix=f"write e.g. {example} under completions_kwargs") from None
    return kwargs


def resolve_evaluator(name_or_path: str | Path | None, search_dirs: list[str | Path] = ()) -> Path:
    """A folder path, the name ``default`` (the project's own), or a folder name under a search dir."""
    chosen = str(name_or_path or DEFAULT_EVALUATOR)
    direct = Path(chosen).expanduser()
    if direct.is_dir():
        return direct
    for base in [PROJECT_EVALUATORS, *map(Path, search_dirs)]:
        if (base / chosen).is_dir():
            return base / chosen
    known = sorted(p.name for base in [PROJECT_EVALUATORS, *map(Path, search_dirs)] if Path(base).is_dir()
                   for p in Path(base).iterdir() if (p / EVALUATOR_CONFIG_FILE).exists())
    raise InputError(f"evaluator {chosen!r} not found", fix=f"pass a folder path or one of: {', '.join(known)}")


def load_evaluator(name_or_path: str | Path | None = None, search_dirs: list[str | Path] = ()) -> EvaluatorSpec:
    folder = resolve_evaluator(name_or_path, search_dirs)
    config_path = folder / EVALUATOR_CONFIG_FILE
    try:
        config_text = read_text(config_path, "evaluator config")
    except UnreadableFile as exc:
        if exc.reason == "not_found" and not config_path.is_symlink():
            raise InputError("evaluator folder has no config.yaml", path=folder) from None
        raise
    config = parse_yaml(config_text, config_path, "evaluator config")
    if not isinstance(config, dict):
        raise InputError("config.yaml must be a mapping", path=config_path)
    template_path = folder / str(config.get("prompt_template", "template.txt"))
    try:
        template_text = read_text(template_path, "prompt template")
    except UnreadableFile as exc:
        if exc.reason == "not_found":
            raise InputError("prompt template not found", path=template_path, field="prompt_template") from None
        raise
    kwargs = check_completions_kwargs(config.get("completions_kwargs"), config_path)
    functions = {f["name"]: f for f in kwargs.get("functions") or []}
    templates = {}
    for block in re.findall(TEMPLATE_FUNCTION_RE, template_text, re.DOTALL):
        names = re.findall(TEMPLATE_NAME_RE, block, re.DOTALL)
        descriptions = re.findall(TEMPLATE_DESCRIPTION_RE, block, re.DOTALL)
        if names and descriptions:
            templates[names[0]] = descriptions[0]
    fingerprint = hashlib.sha256((config_text + "\0" + template_text).encode("utf-8")).hexdigest()
    return EvaluatorSpec(name=str(config.get("evaluator_name", folder.name)), path=folder, templates=templates,
                         functions=functions, temperature=kwargs.get("temperature"),
                         max_tokens=kwargs.get("max_tokens"), fingerprint=fingerprint)
