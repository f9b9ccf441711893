"""Everything that defines a run, in one dataclass: from flags or a YAML file, recorded in the manifest."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from toolbench_adapter.compat import Compat
from toolbench_adapter.errors import InputError
from toolbench_adapter.files.input_files import read_yaml
from toolbench_adapter.structured.policy import reask_limit

from ..search.methods import SearchMethod, known_forms, parse_method
from .limits import (
    Attempts,
    Concurrency,
    MaxQueryCount,
    MaxStep,
    Observation,
    QueryId,
    QueryLimit,
    Rate,
    Seconds,
    Seed,
    StopAfter,
    Temperature,
    Tokens,
    ranged_hint,
)
from .settings_check import (
    NO_FLAG,
    Problem,
    check_value,
    field_defaults,
    flag_for,
    type_hints,
    unknown_key_problem,
)

# types and ranges, checked by runners/config/settings_check.py for config files and flags alike; each top and
# its reason: limits.py
# a set of trials (tba run --trials K) runs every query K times: K x the queries' model calls, paid requests included.
# 100 bounds a typo, not a need: past a few dozen trials the interval no longer narrows much (down to the queries'
# own spread, which only more queries shrink), and 100 trials of the 765 queries are already 76,500 runs of the agent
MAX_TRIALS = 100
TRIALS_WHY = "each trial runs every query once more (paid requests included); past a few dozen the interval no " \
             "longer narrows"


@dataclass
class RunConfig:
    name: Annotated[str, Field(min_length=1)] = "default"
    out_root: str = "results/runs"
    stb_root: str | None = None  # None: $TBA_STB_ROOT, else data/sample
    tool_root: str | None = None
    groups: list[str] = field(default_factory=list)  # empty: every group of the checkout
    query_ids: list[QueryId] = field(default_factory=list)  # empty: every evaluated query
    limit: QueryLimit | None = None  # at most this many queries per group (in file order)
    method: str = "CoT@1"
    max_step: MaxStep = 12  # published numbers use 12; STB code now defaults to 50
    max_query_count: MaxQueryCount = 200  # DFSDT model-call cap
    backend: str = "hf"
    model: str | None = None
    base_url: str | list[str] | None = None  # several: endpoints serving the same model (least busy first)
    api_key: str | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    dialect: str | None = None  # None: the backend's natural dialect (scripted: openai-tools), else toolllama
    dialect_options: dict[str, Any] = field(default_factory=dict)
    parser: str | None = None  # None: the dialect's default parser
    flavour: Literal["legacy", "current"] = "current"  # function format sent (and stored); "legacy" = released answer files
    compat: Literal["stb", "strict"] = "stb"
    compat_flags: dict[str, bool] = field(default_factory=dict)  # single flags over the mode (toolbench_adapter/compat.py)
    server: str | list[str] = "embedded"  # /virtual URL(s), or "embedded" (started in-process on a free loopback port)
    simulator: str = "schema"  # embedded server: what answers cache misses
    cache_dir: str | None = None  # embedded server: response cache folder
    # embedded server: the llm / mirrorapi simulator's endpoint (tba serve's --llm-* flags, one definition:
    # runners/cli/commands/_common.py); the model and temperature are part of the run's identity (DEFINING)
    llm_base_url: Annotated[str, Field(min_length=1)] | None = None  # None: SimulatorOptions' default
    llm_model: Annotated[str, Field(min_length=1)] | None = None  # the id the endpoint lists, whole
    llm_api_key_env: Annotated[str, Field(min_length=1)] | None = None  # None: OPENAI_API_KEY
    llm_temperature: Temperature | None = None  # None: the simulator's own
    mirror_system_prompt: Annotated[str, Field(min_length=1)] | None = None  # mirrorapi: upstream's SFT_SYSTEM file
    server_rate: Rate | None = None  # calls per second to the tool server (None: unpaced)
    server_timeout: Seconds = 120.0  # seconds per tool-server request
    server_attempts: Attempts = 3  # tries per tool call for transport faults (timeouts, resets, 5xx, cut bodies)
    # this many queries in a row ending in infrastructure failures (a dead server or endpoint) and the rest
    # are not started: recorded as failures of that kind, redone by a rerun; 0 never stops
    stop_after_infra_failures: StopAfter = 10
    max_observation_length: Observation = 1024
    max_tokens: Tokens = 1024
    temperature: Temperature = 0.0
    concurrency: Concurrency = 1
    seed: Seed = 42
    shard: str | None = None  # "i/n": this machine runs every n-th query starting at i (1-based)
    # a name in runners/execution/executors.py's EXECUTORS (threads of this process, ray, or a plug-in): checked
    # where the run makes it, as backend and parser are (config/ sits below execution/ and cannot import it)
    executor: Annotated[str, Field(min_length=1)] = "threads"
    ray_address: str | None = None  # executor ray: the cluster to join (None: start a local one)
    # structured output (runners/search/structured.py; neither is upstream): constrained decoding, and what an invalid
    # reply gets: observe (upstream: the environment answers it) or reask:N (asked again, at most N times)
    constrain: Literal["off", "schema"] = "off"
    on_invalid: Annotated[str, Field(min_length=1)] = "observe"
    # an outside agent instead of a model (runners/outside/): this command line, split as a shell would (never run
    # through one), once per query, with the query's tools over MCP; max_step caps its tool calls per query
    agent: Annotated[str, Field(min_length=1)] | None = None
    agent_timeout: Seconds = 600.0  # seconds an outside agent may take on one query

    AGENT_BACKEND = "agent"  # the backend name of a run with --agent (runners/models/outside_agent.py)
    # every query this many times as independent trials (runners/execution/trials.py): trial i in NAME/trial-i/ with
    # seed + i, the seed sent to endpoints that take one; 1: an ordinary run folder, as before
    trials: ranged_hint(int, ge=1, le=MAX_TRIALS, why=TRIALS_WHY) = 1
    # set by a set of trials on each of its trial folders' runs (not a user setting): this run is trial i, so its
    # model requests carry its seed
    trial: ranged_hint(int, ge=0, le=MAX_TRIALS - 1, why=TRIALS_WHY) | None = None

    def __post_init__(self) -> None:
        # one URL stays a plain string (as flags and config files always gave it); several stay a list
        for name in ("base_url", "server"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                setattr(self, name, value[0] if len(value) == 1 else list(value))
        if self.agent is not None and self.backend == "hf":  # the default backend: --agent alone names the run's
            self.backend = self.AGENT_BACKEND

    def search_method(self) -> SearchMethod:
        """The registered search method this run's method string names (runners/search/methods.py); InputError
        for one no method reads."""
        return parse_method(self.method)

    def shard_parts(self) -> tuple[int, int] | None:
        if not self.shard:
            return None
        match = re.fullmatch(r"(\d+)/(\d+)", self.shard)
        if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
            raise InputError(f"bad shard {self.shard!r}", field="shard", fix="write i/n with 1 <= i <= n, e.g. 2/4")
        return int(match.group(1)), int(match.group(2))

    @property
    def run_dir(self) -> Path:
        return Path(self.out_root) / self.name

    def validate(self) -> None:
        """Every setting's type and range, then what the types cannot say (method, shard, compat flags):
        InputError naming the setting (its flag) and the fix. A config file's own values are checked when it
        is read (load_yaml), so what fails here came from flags or from code."""
        problems = settings_problems({f.name: getattr(self, f.name) for f in fields(self)}, in_file=False)
        if problems:
            raise problems_error(problems, path=None)
        self.check_simulator()  # the whole run's settings only: a config file or a sweep's base may hold part

    def check_semantics(self) -> None:
        """What the types cannot say; raises InputError."""
        self.search_method()
        self.shard_parts()
        reask_limit(self.on_invalid)
        self.check_agent()
        if self.trial is not None and self.trials != 1:
            raise InputError(f"a trial folder's run is one trial (trial {self.trial}), not a set of {self.trials}",
                             field="trial", fix="leave trial out: tba run --trials K sets it for each trial folder")
        if isinstance(self.server, list) and "embedded" in self.server:
            raise InputError("'embedded' cannot be one of several tool servers", field="server",
                             fix="pass either --server embedded or one --server URL per running server")
        known_flags = Compat.flag_names()
        for flag, value in self.compat_flags.items():
            if flag not in known_flags or not isinstance(value, bool):
                raise InputError(f"bad compat flag {flag}: {value!r}", field="compat_flags",
                                 fix=f"map flag names ({', '.join(known_flags)}) to true or false")

    SIMULATOR_SETTINGS = ("llm_base_url", "llm_model", "llm_api_key_env", "llm_temperature", "mirror_system_prompt")

    def check_simulator(self) -> None:
        """The --llm-* settings configure the embedded server's llm / mirrorapi simulator: refused where nothing
        would read them (another simulator, an external tool server), and required where it asks a model. Checked
        on a whole run's settings (validate): a config file under flags, a sweep's base under its axes, may each
        hold one part."""
        from toolbench_adapter.server.simulators import MODEL_SIMULATORS

        given = [name for name in self.SIMULATOR_SETTINGS if getattr(self, name) is not None]
        flags = ", ".join(flag_for(name) for name in given)
        if given and self.server != "embedded":
            servers = self.server if isinstance(self.server, str) else ", ".join(self.server)
            raise InputError(f"{flags} configure the embedded server's simulator, but the tool server at {servers} "
                             "answers misses with its own simulator", field=flag_label(given[0]),
                             fix="leave them out (that server's are tba serve's flags of the same names), or leave "
                             "--server out to run the embedded server")
        if given and self.simulator not in MODEL_SIMULATORS:
            raise InputError(f"{flags} configure the llm or mirrorapi simulator, but --simulator {self.simulator} "
                             "asks no model", field=flag_label(given[0]),
                             fix="pass --simulator llm (or mirrorapi), or leave the --llm-* flags out")
        if self.simulator in MODEL_SIMULATORS and self.llm_model is None and self.server == "embedded":
            raise InputError(f"the {self.simulator} simulator asks a model: --llm-model is not given",
                             field=flag_label("llm_model"), fix="pass --llm-model NAME (the leaderboard's simulator: --llm-model "
                             "gpt-4-turbo --llm-base-url https://api.openai.com/v1)")
        if self.mirror_system_prompt is not None and self.simulator != "mirrorapi":
            raise InputError("--mirror-system-prompt is MirrorAPI's system prompt, but --simulator "
                             f"{self.simulator} does not read it", field=flag_label("mirror_system_prompt"),
                             fix="pass --simulator mirrorapi, or leave --mirror-system-prompt out")

    def simulator_options(self):
        """The embedded server's SimulatorOptions from the --llm-* settings (the key read from its variable)."""
        from toolbench_adapter.server.simulators import SimulatorOptions

        return SimulatorOptions.from_settings(self.llm_base_url, self.llm_model, self.llm_api_key_env,
                                              self.llm_temperature, self.mirror_system_prompt)

    def check_agent(self) -> None:
        """An outside agent replaces the model, the dialect and the search: one chain of its own calls."""
        if self.agent is None:
            if self.backend == self.AGENT_BACKEND:
                raise InputError("the agent backend runs an outside agent: no command given", field="agent",
                                 fix="pass --agent 'CMD ARGS' (its tools over MCP), or another --backend")
            return
        from ..models.outside_agent import agent_argv

        agent_argv(self.agent)
        if self.backend != self.AGENT_BACKEND:
            raise InputError(f"--agent runs an outside agent instead of a model, but --backend {self.backend} is "
                             "given too", field="backend", fix="leave --backend out (or pass --backend agent)")
        if self.method != "CoT@1":
            raise InputError(f"an outside agent makes one chain of calls of its own, not {self.method}",
                             field="method", fix="leave --method out (CoT@1: one chain, the answer file's shape)")
        if self.constrain != "off" or self.on_invalid != "observe":
            raise InputError("--constrain and --on-invalid shape a model's replies: an outside agent has none here",
                             field="constrain", fix="leave --constrain and --on-invalid out with --agent")

    def as_dict(self) -> dict:
        return asdict(self)

    def compat_settings(self) -> Compat:
        return Compat.from_mode(self.compat, **self.compat_flags)

    # what must match for two runs (or shards) to be the same run
    DEFINING = ("method", "max_step", "max_query_count", "backend", "model", "dialect", "dialect_options",
                "parser", "flavour", "compat", "compat_flags", "simulator", "llm_model", "llm_temperature",
                "max_observation_length", "max_tokens", "temperature", "seed", "constrain", "on_invalid", "agent",
                "trial")
    # what a manifest written before a defining setting existed ran with
    DEFINING_BEFORE = {"compat_flags": {}, "constrain": "off", "on_invalid": "observe", "agent": None, "trial": None,
                       "llm_model": None, "llm_temperature": None}

    def defining(self) -> dict:
        return {key: getattr(self, key) for key in self.DEFINING}

    @classmethod
    def defining_of(cls, config: dict) -> dict:
        """The defining settings of a recorded config (a manifest written before compat_flags had none)."""
        return {key: config.get(key, cls.DEFINING_BEFORE.get(key)) for key in cls.DEFINING}


# corrected values shown in messages for settings whose default is no example (None, empty)
EXAMPLES: dict[str, Any] = {
    "stb_root": "../StableToolBench", "tool_root": "../StableToolBench/toolenv/tools", "groups": ["G1_instruction"],
    "query_ids": [1, 2], "limit": 10, "model": "ToolLLaMA-2-7b-v2", "base_url": "http://127.0.0.1:8000/v1",
    "api_key": "EMPTY", "backend_options": {"rate_per_s": 6}, "dialect": "toolllama",
    "dialect_options": {"history": "thought"}, "parser": "react-find", "compat_flags": {"dfs_no_give_up_answer": True},
    "cache_dir": "results/cache/tools", "server_rate": 8, "shard": "1/4", "ray_address": "auto",
    "temperature": 0, "stop_after_infra_failures": 10, "on_invalid": "reask:2",
    "agent": "python examples/agents/mcp_chat_agent.py", "agent_timeout": 600, "trials": 5,
    "llm_base_url": "https://api.openai.com/v1", "llm_model": "gpt-4-turbo", "llm_api_key_env": "OPENAI_API_KEY",
    "llm_temperature": 0, "mirror_system_prompt": "sft_system.txt",
}
# (the method's forms come from the search-method registry when a message needs them: known_forms)
EXPECTED = {"compat_flags": "a mapping of compat flag names to true or false", "shard": "i/n with 1 <= i <= n",
            "on_invalid": "observe or reask:N"}


def settings_problems(settings: dict[str, Any], in_file: bool) -> list[Problem]:
    """Every problem with these settings (unknown names, types, ranges, then method / shard / compat flags)."""
    hints = type_hints(RunConfig)
    known = list(hints)
    defaults = field_defaults(RunConfig)
    problems = [unknown_key_problem(str(key), known) for key in settings if key not in hints]
    for name, value in settings.items():
        if name in hints:
            expected = {**EXPECTED, "method": known_forms()} if name == "method" else EXPECTED
            problem = check_value(name, hints[name], value, default=defaults[name], examples=EXAMPLES,
                                  expected=expected, in_file=in_file)
            if problem is not None:
                problems.append(problem)
    if in_file and "trial" in settings and not any(p.field == "trial" for p in problems):
        # the trial folders' own setting (runners/execution/trials.py): a file that sets it is a mistake
        problems.append(Problem("trial", "trial is set by tba run --trials on each trial folder's run, not by a file",
                                "leave trial out; write trials: K to run every query K times"))
    if problems:
        return problems
    try:  # the types are right: what they cannot say, on a config built from these settings
        RunConfig(**{k: v for k, v in settings.items() if k in hints}).check_semantics()
    except InputError as exc:
        problems.append(Problem(exc.field or "", exc.problem, exc.fix))
    return problems


def problems_error(problems: list[Problem], path: str | Path | None) -> InputError:
    """One problem: InputError with its field and fix; several: one message listing each, with its fix."""
    if len(problems) == 1:
        problem = problems[0]
        field_name = problem.field if path is not None else flag_label(problem.field)
        return InputError(problem.problem, path=path, field=field_name, fix=problem.fix)
    lines = [f"{len(problems)} settings are wrong:"]
    for problem in problems:
        label = problem.field if path is not None else flag_label(problem.field)
        lines.append(f"  {label}: {problem.problem}" + (f"\n    fix: {problem.fix}" if problem.fix else ""))
    return InputError("\n".join(lines), path=path)


def flag_label(name: str) -> str:
    """A setting as flags name it (``--temperature``); one without a flag keeps its config-file name."""
    return name if name in NO_FLAG or not name else f"{name} ({flag_for(name)})"


def load_yaml(path: str | Path) -> dict:
    """A config file's settings, every one checked (names, types, ranges): InputError (exit 2) naming the
    file, each wrong setting and its fix."""
    path = Path(path)
    data = read_yaml(path, "config file") or {}
    if not isinstance(data, dict):
        raise InputError("config file must hold a mapping of run settings", path=path,
                         fix="write one `setting: value` per line, e.g. concurrency: 4")
    problems = settings_problems(data, in_file=True)
    if problems:
        raise problems_error(problems, path=path)
    return data
