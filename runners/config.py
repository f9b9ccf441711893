"""Everything that defines a run, in one dataclass: from flags or a YAML file, recorded in the manifest."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import yaml

from toolbench_adapter.compat import Compat
from toolbench_adapter.errors import InputError

METHOD_PATTERN = re.compile(r"^(CoT@(?P<pass_at>\d+)|DFS_woFilter_w(?P<width>\d+))$")


@dataclass
class RunConfig:
    name: str = "default"
    out_root: str = "results/runs"
    stb_root: str | None = None  # None: $TBA_STB_ROOT, else data/sample
    tool_root: str | None = None
    groups: list[str] = field(default_factory=list)  # empty: every group of the checkout
    query_ids: list[int] = field(default_factory=list)  # empty: every evaluated query
    limit: int | None = None  # at most this many queries per group (in file order)
    method: str = "CoT@1"
    max_step: int = 12  # published numbers use 12; STB code now defaults to 50
    max_query_count: int = 200  # DFSDT model-call cap
    backend: str = "hf"
    model: str | None = None
    base_url: str | list[str] | None = None  # several: endpoints serving the same model (least busy first)
    api_key: str | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    dialect: str | None = None  # None: the backend's natural dialect (scripted: openai-tools), else toolllama
    dialect_options: dict[str, Any] = field(default_factory=dict)
    parser: str | None = None  # None: the dialect's default parser
    flavour: str = "current"  # function format sent (and stored); "legacy" = released answer files
    compat: str = "stb"
    compat_flags: dict[str, bool] = field(default_factory=dict)  # single flags over the mode (toolbench_adapter/compat.py)
    server: str | list[str] = "embedded"  # /virtual URL(s), or "embedded" (started in-process on a free loopback port)
    simulator: str = "schema"  # embedded server: what answers cache misses
    cache_dir: str | None = None  # embedded server: response cache folder
    server_rate: float | None = None  # calls per second to the tool server (None: unpaced)
    server_timeout: float = 120.0  # seconds per tool-server request
    server_attempts: int = 3  # tries per tool call for transport faults (timeouts, resets, 5xx, cut bodies)
    # this many queries in a row ending in infrastructure failures (a dead server or endpoint) and the rest
    # are not started: recorded as failures of that kind, redone by a rerun; 0 never stops
    stop_after_infra_failures: int = 10
    max_observation_length: int = 1024
    max_tokens: int = 1024
    temperature: float = 0.0
    concurrency: int = 1
    seed: int = 42
    shard: str | None = None  # "i/n": this machine runs every n-th query starting at i (1-based)
    executor: str = "threads"  # how queries are spread: threads of this process, or ray (runners/executors.py)
    ray_address: str | None = None  # executor ray: the cluster to join (None: start a local one)

    def __post_init__(self) -> None:
        # one URL stays a plain string (as flags and config files always gave it); several stay a list
        for name in ("base_url", "server"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                setattr(self, name, value[0] if len(value) == 1 else list(value))

    def method_parts(self) -> tuple[str, int]:
        match = METHOD_PATTERN.match(self.method)
        if not match:
            raise InputError(f"unknown method {self.method!r}", field="method",
                             fix="use CoT@N (e.g. CoT@1) or DFS_woFilter_wN (e.g. DFS_woFilter_w2)")
        kind, value = ("cot", match.group("pass_at")) if match.group("pass_at") else ("dfs", match.group("width"))
        if int(value) < 1:  # CoT@0 would run no chain and DFS width 0 no expansion: empty answers
            what = "CoT@N needs N" if kind == "cot" else "DFS_woFilter_wN needs N"
            raise InputError(f"method {self.method!r}: {what} >= 1", field="method",
                             fix="use e.g. CoT@1 or DFS_woFilter_w2")
        return kind, int(value)

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
        self.method_parts()
        self.shard_parts()
        if self.concurrency < 1:
            raise InputError("concurrency must be at least 1", field="concurrency")
        for name in ("max_step", "max_query_count", "max_tokens", "server_attempts"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be at least 1 (got {getattr(self, name)})", field=name)
        if self.stop_after_infra_failures < 0:
            raise InputError(f"stop_after_infra_failures must be 0 (never stop) or more "
                             f"(got {self.stop_after_infra_failures})", field="stop_after_infra_failures")
        if self.limit is not None and self.limit < 1:  # 0 would read as "no limit" and run everything
            raise InputError(f"limit must be at least 1 (got {self.limit})", field="limit",
                             fix="leave --limit out to run every query")
        if self.executor not in ("threads", "ray"):
            raise InputError(f"unknown executor {self.executor!r}", field="executor",
                             fix="threads (default: this process) or ray (a Ray cluster, pip install -e '.[ray]')")
        if isinstance(self.server, list) and "embedded" in self.server:
            raise InputError("'embedded' cannot be one of several tool servers", field="server",
                             fix="pass either --server embedded or one --server URL per running server")
        if self.server_timeout <= 0:
            raise InputError(f"server_timeout must be positive (got {self.server_timeout})", field="server_timeout")
        known_flags = Compat.flag_names()
        for flag, value in self.compat_flags.items():
            if flag not in known_flags or not isinstance(value, bool):
                raise InputError(f"bad compat flag {flag}: {value!r}", field="compat_flags",
                                 fix=f"map flag names ({', '.join(known_flags)}) to true or false")
        if self.flavour not in ("legacy", "current"):
            raise InputError(f"unknown flavour {self.flavour!r}", field="flavour", fix="legacy or current")

    def as_dict(self) -> dict:
        return asdict(self)

    def compat_settings(self) -> Compat:
        return Compat.from_mode(self.compat, **self.compat_flags)

    # what must match for two runs (or shards) to be the same run
    DEFINING = ("method", "max_step", "max_query_count", "backend", "model", "dialect", "dialect_options",
                "parser", "flavour", "compat", "compat_flags", "simulator", "max_observation_length", "max_tokens",
                "temperature", "seed")

    def defining(self) -> dict:
        return {key: getattr(self, key) for key in self.DEFINING}

    @classmethod
    def defining_of(cls, config: dict) -> dict:
        """The defining settings of a recorded config (a manifest written before compat_flags had none)."""
        return {key: config.get(key, {} if key == "compat_flags" else None) for key in cls.DEFINING}


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise InputError("config file not found", path=path) from None
    except yaml.YAMLError as exc:
        raise InputError(f"config file is not valid YAML: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("config file must hold a mapping of run settings", path=path)
    known = {f.name for f in fields(RunConfig)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise InputError(f"unknown setting(s) {', '.join(unknown)}", path=path,
                         fix=f"known settings: {', '.join(sorted(known))}")
    return data
