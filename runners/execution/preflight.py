"""What a run settles before any query: the backend it asks, the dialect and parser that fit it, and the search
method; each mismatch refused (InputError, exit 2) before the run spends anything."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from toolbench_adapter.compat import Compat
from toolbench_adapter.dialects import make_dialect
from toolbench_adapter.errors import InputError

from ..config import RunConfig
from ..models import BACKENDS
from ..models.base import natural_dialect
from ..outside.drive import make_outside
from ..search.agent import make_parse, reads_native_calls
from ..search.methods import SearchLimits, SearchMethod
from ..search.structured import StructuredOutput, make_structured

DEFAULT_DIALECT = "toolllama"


def fit_dialect(cfg: RunConfig, backend: Any) -> RunConfig:
    """The config with its dialect settled: the one given, else the backend's natural one (its text dialect when
    it has one and the parser reads text), else toolllama.
    A parser that cannot read what the backend answers (native tool calls vs text) is refused here, before
    the run spends anything: every step would otherwise end as empty_output."""
    natural = natural_dialect(backend)
    text_dialect = getattr(backend, "text_dialect", None)  # a backend that answers a text prompt in this one too
    if natural and text_dialect and not cfg.dialect and cfg.parser and not reads_native_calls(cfg.parser):
        natural = text_dialect  # scripted with a text parser: its text dialect, not its native calls
    cfg = replace(cfg, dialect=cfg.dialect or natural or DEFAULT_DIALECT)
    try:
        dialect = make_dialect(cfg.dialect, **cfg.dialect_options)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), field="dialect_options", fix="check --dialect-option names and values") from None
    check_backend_takes(backend, dialect, cfg.backend)
    if not natural:
        return cfg
    parser = cfg.parser or dialect.default_parser
    fitting = make_dialect(natural).default_parser
    if reads_native_calls(parser) == reads_native_calls(fitting) or cfg.dialect == text_dialect:
        return cfg
    says = "native tool calls" if reads_native_calls(fitting) else "text"
    reads = "native tool calls" if reads_native_calls(parser) else "text"
    name = getattr(backend, "name", cfg.backend)
    fix = f"pass --dialect {natural} (or leave --dialect out)" if cfg.dialect != natural else ""
    if cfg.parser:
        fix += (" and " if fix else "") + f"a parser of {says}, e.g. --parser {fitting} (or leave --parser out)"
    raise InputError(f"the {name} backend answers with {says} (its dialect: {natural}), but the parser "
                     f"{parser} of dialect {cfg.dialect} reads {reads}: every step would be unreadable",
                     field="dialect", fix=fix)


def check_backend_takes(backend: Any, dialect: Any, backend_name: str) -> None:
    """A dialect that renders chat messages needs a backend that accepts them (openai-completions takes a
    text prompt only), and one that sends native tools needs a backend that passes them to the model (hf has
    no native tools): otherwise every turn fails the same way, so refuse before the run."""
    messages, tools = dialect.sends()
    name = getattr(backend, "name", backend_name)
    if messages and getattr(backend, "accepts_messages", True) is False:
        raise InputError(f"the {name} backend takes a text prompt, but the {dialect.name} dialect renders chat "
                         "messages", field="dialect",
                         fix="pass --dialect toolllama (a text prompt), or use --backend openai-chat for chat dialects")
    if not messages and getattr(backend, "accepts_prompt", True) is False:
        raise InputError(f"the {name} backend takes chat messages, but the {dialect.name} dialect renders a text "
                         "prompt", field="dialect",
                         fix="pass --dialect-option template=chat (toolllama over chat) or a chat dialect, or use "
                         "--backend openai-completions for a text prompt")
    if tools and getattr(backend, "supports_tools", True) is False:
        raise InputError(f"the {name} backend has no native tool calls, but the {dialect.name} dialect sends "
                         "native tools", field="dialect",
                         fix="pass a text dialect (--dialect toolllama, json-object, jsonl or hermes)")


def stop_strings(backend: Any, dialect: Any) -> list[str]:
    """The stop strings a turn's request carries: the backend's own (openai-completions: upstream's "</s>"),
    then the dialect's (toolllama: "</s>", and the next step's markers with stop_at_next_step)."""
    own = getattr(backend, "stop", ()) or ()
    listed = getattr(dialect, "stop_strings", None)
    return list(dict.fromkeys([*([own] if isinstance(own, str) else own), *(listed() if listed else [])]))


def make_backend(cfg: RunConfig):
    options = {k: v for k, v in (("model", cfg.model), ("base_url", cfg.base_url), ("api_key", cfg.api_key))
               if v is not None}
    if cfg.agent is not None:  # the outside agent's stand-in: never asked, names the agent (models/outside_agent.py)
        options["command"] = cfg.agent
    return BACKENDS.get(cfg.backend)(**options, **cfg.backend_options)


@dataclass
class RunSetup:
    """Everything one query needs that the run's settings fix: built once per process (the driver, each Ray
    worker) from the config and a backend."""

    cfg: RunConfig  # with its dialect settled (fit_dialect)
    backend: Any
    compat: Compat
    dialect: Any
    parser_name: str
    parse: Any
    structured: StructuredOutput | None
    method: SearchMethod
    limits: SearchLimits
    # an outside agent drives each query instead of the search (runners/outside/drive.py); None: a model run
    outside: Any = None


def prepare(cfg: RunConfig, backend: Any, outside: Any = None) -> RunSetup:
    """The run's settings checked and settled against its backend (InputError, exit 2, before anything runs).
    ``outside``: the driver of an outside agent's queries (tba serve-tools' own); else --agent's, or none."""
    cfg.validate()
    method = cfg.search_method()
    cfg = fit_dialect(cfg, backend)
    compat = cfg.compat_settings()
    dialect = make_dialect(cfg.dialect, **cfg.dialect_options)
    parser_name = cfg.parser or dialect.default_parser
    return RunSetup(cfg=cfg, backend=backend, compat=compat, dialect=dialect, parser_name=parser_name,
                    parse=make_parse(parser_name),
                    # native tools with a JSON response mode refused; --constrain / --on-invalid (search/structured.py)
                    structured=make_structured(cfg, backend, dialect), method=method,
                    limits=SearchLimits(max_step=cfg.max_step, max_query_count=cfg.max_query_count, compat=compat,
                                        seed=cfg.seed),
                    outside=outside if outside is not None else make_outside(cfg))


def simulator_endpoint(cfg: RunConfig):
    """The embedded server's llm / mirrorapi endpoint, checked before any query (one GET /models: reachable, the
    key taken, the model listed whole) or InputError (exit 2) naming the flag: a dead simulator endpoint is found
    here, not as one failed answer per cache miss. None: the simulator asks no model, or another tool server
    answers the misses. Its facts are the evidence comparability reads (setup_facts.py)."""
    from toolbench_adapter.server.simulators.endpoint import check_endpoint

    if cfg.server != "embedded":
        return None
    return check_endpoint(cfg.simulator, cfg.simulator_options(), key_env=cfg.llm_api_key_env)
