"""A sweep's spec file: what runs (base settings x axes = cells), who judges, which cell is the baseline.

```yaml
name: demo
base: {backend: scripted, groups: [G1_instruction], limit: 3}      # any tba run setting (config: FILE too)
axes:                                                            # the cross product gives the cells
  method: ["CoT@1", "DFS_woFilter_w2"]
  parser: [react-find, react-robust]                             # a value may be a mapping of settings
judges: [{backend: openai, url: "http://127.0.0.1:8000/v1", model: judge-x, api_key: x, evaluate_times: 1}]
baseline: {method: "CoT@1", parser: react-find}
endpoints: {"http://127.0.0.1:8001/v1": {max_in_flight: 4, rate_per_s: 20}}
trials: 3                                                        # optional: every cell a set of 3 trials
```

Everything is checked here, before any cell runs: an error names the spec file, the key (``axes.method[1]``)
and the fix (InputError, exit 2). A run setting is checked with the rules of tba run's --config files.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.input_files import UnreadableFile, read_yaml
from toolbench_adapter.net.limits import CONCURRENCY_WHY, MAX_CONCURRENCY, MAX_RATE_PER_S, RATE_WHY, number_problem
from toolbench_adapter.queryset.query_identity import canonical_sha256
from toolbench_adapter.registry import UnknownNameError

from ..config.run_config import load_yaml, settings_problems

TOP_KEYS = ("name", "base", "axes", "judges", "baseline", "endpoints", "judge_cache", "trials")
# a judge's keys and the tba evaluate flag each stands for (the CLI parses them with tba evaluate's own parser)
JUDGE_KEYS = {"backend": "--judge-backend", "model": "--judge-model", "url": "--judge-url",
              "api_key": "--judge-api-key", "self": "--judge-self", "mode": "--judge-mode",
              "prefill": "--judge-prefill", "constrain": "--judge-constrain", "max_tokens": "--judge-max-tokens",
              "timeout": "--judge-timeout", "options": "--judge-option", "evaluator": "--evaluator",
              "evaluators_dir": "--evaluators-dir", "evaluate_times": "--evaluate-times",
              "concurrency": "--concurrency"}
ENDPOINT_KEYS = ("max_in_flight", "rate_per_s")
DEFAULT_MAX_IN_FLIGHT = 8  # an endpoint the spec's endpoints: does not list
MAX_CELLS = 1000  # runners/config/limits.py's MAX_CELLS (--max-cells) is the same number
CELL_SEPARATOR = "__"
EXAMPLE = "axes: {method: [\"CoT@1\", \"DFS_woFilter_w2\"]}"


@dataclass(frozen=True)
class AxisValue:
    label: str  # what names it in the cell's folder, the matrix and the baseline
    settings: dict[str, Any]  # the run settings it sets


@dataclass(frozen=True)
class Axis:
    name: str
    values: tuple[AxisValue, ...]


@dataclass(frozen=True)
class Judge:
    label: str  # the matrix's name for it (its label:, else its model, else its backend)
    settings: dict[str, Any]  # tba evaluate's judge settings, as the spec's keys


@dataclass(frozen=True)
class Cell:
    name: str  # its folder under OUT/NAME: the axis labels joined by "__"
    axes: dict[str, str]  # axis -> value label
    settings: dict[str, Any]  # base, then each axis value in axis order (config: files first)

    def shares_calls_with(self) -> str:
        """Cells with the same key differ at most in the parser: one model memo serves them all (the fan-out)."""
        return canonical_sha256({k: v for k, v in self.settings.items() if k != "parser"})


@dataclass
class Spec:
    path: Path
    name: str
    base: dict[str, Any]
    axes: list[Axis]
    judges: list[Judge]
    baseline: dict[str, str] | None = None
    endpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    judge_cache: str = "results/cache/judge.jsonl"
    trials: int = 1  # every cell a set of this many trials (tba run --trials); 1: ordinary run folders
    raw: dict[str, Any] = field(default_factory=dict)  # as read (plus overrides): what sweep.json records
    _cells: list[Cell] | None = field(default=None, init=False, repr=False)  # built once: config files read once

    def cells(self) -> list[Cell]:
        if self._cells is None:
            self._cells = self._build_cells()
        return self._cells

    def _build_cells(self) -> list[Cell]:
        check_cell_count(self.axes, self.path)
        cells = []
        for combination in itertools.product(*(axis.values for axis in self.axes)):
            settings = resolve([self.base, *(value.settings for value in combination)], self.path)
            labels = {axis.name: value.label for axis, value in zip(self.axes, combination, strict=True)}
            cells.append(Cell(name=cell_name(labels.values()), axes=labels, settings=settings))
        names = [cell.name for cell in cells]
        clashes = sorted({n for n in names if names.count(n) > 1})
        if clashes:
            raise InputError(f"two cells get the same folder name {clashes[0]!r}", path=self.path, field="axes",
                             fix="give the values distinct labels (a mapping value takes label: NAME)")
        return cells

    def baseline_cell(self) -> str | None:
        if self.baseline is None:
            return None
        return cell_name(self.baseline[axis.name] for axis in self.axes)

    def identity(self) -> dict[str, Any]:
        """What defines the sweep's results: base, axes and judges as written, and each cell's settings as they
        resolve (a config: file's contents included: one edited between runs is another sweep); the baseline and
        the endpoints' caps change only the matrix and the pace."""
        return {"base": self.raw.get("base"), "axes": self.raw.get("axes"), "judges": self.raw.get("judges"),
                "cells": {cell.name: recorded_settings(cell.settings) for cell in self.cells()}}

    def digest(self) -> str:
        return canonical_sha256(redact_spec(self.identity()))


UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]")


def safe_name(text: str) -> str:
    """A label as a folder name: any other character becomes "_" (a path separator never gets through)."""
    return UNSAFE.sub("_", text).strip(".") or "_"


def cell_name(labels) -> str:
    return CELL_SEPARATOR.join(safe_name(str(label)) for label in labels)


def load_spec(path: str | Path, *, name: str | None = None, base_overrides: dict | None = None,
              judges_override: list[dict] | None = None, axes_override: dict[str, list] | None = None,
              trials: int | None = None) -> Spec:
    """The spec at ``path``, every key checked. ``base_overrides``: run settings given on the command line (they
    replace base's); ``judges_override``: one judge given by flags replaces the spec's judges; ``axes_override``:
    an axis's values given on the command line (--axis parser=a,b) replace the spec's; ``trials``: --trials (it
    replaces the spec's trials:)."""
    path = Path(path)
    try:
        data = read_yaml(path, "sweep spec")
    except UnreadableFile as exc:  # a typo in the file's name: the closest specs beside it
        near = did_you_mean_spec(path) if exc.reason == "not_found" else None
        if near is None:
            raise
        raise UnreadableFile(exc.reason, exc.problem, path=path, fix=near) from None
    if not isinstance(data, dict):
        raise InputError("a sweep spec is a mapping with name, base, axes and judges", path=path,
                         fix="see docs/sweeps.md for an example")
    for key in data:
        if key not in TOP_KEYS:
            raise InputError(f"unknown key {key!r}", path=path, field=str(key),
                             fix=f"use {', '.join(TOP_KEYS)}")
    raw = json.loads(json.dumps(data, default=str))  # plain JSON types, as sweep.json keeps it
    if base_overrides:  # a flag replaces its setting; option pairs are added to base's, as tba run adds them
        base = dict(raw.get("base") or {})
        for key, value in base_overrides.items():
            merge = key.endswith("_options") and isinstance(base.get(key), dict)
            base[key] = {**base[key], **value} if merge else value
        raw["base"] = base
    if judges_override is not None:
        raw["judges"] = judges_override
    if name is not None:
        raw["name"] = name
    if trials is not None:
        raw["trials"] = trials
    for axis_name, values in (axes_override or {}).items():
        if axis_name not in (raw.get("axes") or {}):
            raise InputError(f"--axis {axis_name}: the spec has no such axis", path=path, field="axes",
                             fix=f"name one of its axes: {', '.join(raw.get('axes') or {}) or '(none)'}")
        raw["axes"][axis_name] = values
    sweep_name = raw.get("name")
    if not isinstance(sweep_name, str) or not sweep_name.strip() or safe_name(sweep_name) != sweep_name:
        raise InputError(f"name must be a folder name, got {sweep_name!r}", path=path, field="name",
                         fix="write e.g. name: demo (letters, digits, '-', '_', '.', '@'), or pass --name")
    base = mapping(raw.get("base") or {}, path, "base")
    check_settings(base, path, "base")
    axes = read_axes(raw.get("axes"), path)
    check_cell_count(axes, path)
    judges = read_judges(raw.get("judges"), path)
    spec = Spec(path=path, name=sweep_name, base=base, axes=axes, judges=judges,
                baseline=read_baseline(raw.get("baseline"), axes, path),
                endpoints=read_endpoints(raw.get("endpoints"), path),
                judge_cache=str(raw.get("judge_cache") or "results/cache/judge.jsonl"),
                trials=read_trials_key(raw.get("trials", 1), path), raw=raw)
    for cell in spec.cells():  # each cell's whole settings, checked as a run's
        check_settings(cell.settings, path, f"cell {cell.name}")
    return spec


def read_trials_key(value: Any, path: Path) -> int:
    """trials: K, a whole number in tba run --trials' range."""
    from ..config.run_config import MAX_TRIALS

    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TRIALS:
        raise InputError(f"trials must be a whole number from 1 to {MAX_TRIALS}, got {value!r}", path=path,
                         field="trials", fix="write trials: 3 (every cell a set of 3 trials; 1: none)")
    return value
def did_you_mean_spec(path: Path) -> str | None:
    """``did you mean runners/sweeps/demo.yaml?`` for a spec file that is not there: the YAML files beside where it
    was looked for (its folder, or the shipped runners/sweeps/ for a bare name) whose names are closest."""
    import difflib

    folders = [path.parent] if path.parent != Path(".") else [path.parent, Path(__file__).parent.parent / "sweeps"]
    found = {}
    for folder in folders:
        try:
            for candidate in sorted(folder.iterdir())[:1000]:
                if candidate.suffix in (".yaml", ".yml") and candidate.is_file():
                    shown = candidate if folder == path.parent else Path(os.path.relpath(candidate))
                    found.setdefault(candidate.stem, str(shown))
        except OSError:
            continue
    close = difflib.get_close_matches(path.stem, list(found), n=3, cutoff=0.6)  # by name: demo for dmeo.yaml
    if not close:
        return None
    return ("did you mean " + " or ".join(found[name] for name in close) + "? (tba sweep SPEC.yaml: the spec's path, "
            "from the folder you run in)")


def mapping(value: Any, path: Path, key: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"must be a mapping, got {type(value).__name__}", path=path, field=key,
                         fix=f"write {key}: {{setting: value, ...}}")
    return value


def check_settings(settings: dict, path: Path, key: str, scalar: bool = False) -> None:
    """Run settings as tba run's --config file takes them (config: FILE read too), or InputError naming the key
    (``scalar``: one axis value, named by its place alone: axes.method[1])."""
    own = {k: v for k, v in settings.items() if k != "config"}
    if "trials" in own:  # one count for every cell: the comparisons pair cells with the same trials
        raise InputError("trials is the sweep's, not a cell's setting", path=path,
                         field=key if scalar else f"{key}.trials",
                         fix="write trials: K at the top of the spec (every cell gets K trials), or pass --trials K")
    problems = settings_problems(own, in_file=True)
    if problems:
        problem = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        field_name = f"{key}.{problem.field}" if problem.field and not scalar else key
        raise InputError(problem.problem + more, path=path, field=field_name, fix=problem.fix)
    for name, registry in named_registries():  # an unknown name with the closest ones, at the key that set it
        value = own.get(name)
        if isinstance(value, str) and value not in registry:
            try:
                registry.get(value)
            except UnknownNameError as exc:
                raise InputError(str(exc), path=path, field=key if scalar else f"{key}.{name}",
                                 fix=f"write one of the known {name}s: {', '.join(registry.names())}") from None
    if settings.get("config"):  # "" (--config= on the command line): none
        config_file(settings["config"], path, key)


def named_registries():
    from toolbench_adapter.dialects import DIALECTS
    from toolbench_adapter.parsers import PARSERS

    from ..models import BACKENDS

    return (("backend", BACKENDS), ("dialect", DIALECTS), ("parser", PARSERS))


def config_file(value: Any, path: Path, key: str) -> dict:
    if not isinstance(value, str):
        raise InputError("config must be the path of a run config file", path=path, field=f"{key}.config",
                         fix="write config: runners/configs/smollm2.yaml")
    return load_yaml(value)  # its own errors name the file


def resolve(layers: list[dict], path: Path) -> dict:
    """One run's settings: each layer's config: file first, then its own keys, in order (the last wins)."""
    settings: dict[str, Any] = {}
    for layer in layers:
        if layer.get("config"):
            settings.update(config_file(layer["config"], path, "config"))
        settings.update({k: v for k, v in layer.items() if k not in ("config", "label")})
    return settings


def read_axes(value: Any, path: Path) -> list[Axis]:
    if not isinstance(value, dict) or not value:
        raise InputError("axes must be a mapping of run settings to lists of values", path=path, field="axes",
                         fix=f"write e.g. {EXAMPLE}")
    axes = []
    for axis_name, values in value.items():
        key = f"axes.{axis_name}"
        if not isinstance(values, list) or not values:
            raise InputError("an axis is a non-empty list of values", path=path, field=key,
                             fix=f"write e.g. {EXAMPLE}")
        read = []
        for index, item in enumerate(values):
            where = f"{key}[{index}]"
            if isinstance(item, dict):
                settings = dict(item)
                label = settings.get("label", settings.get(axis_name))
                if label is None:
                    raise InputError("a mapping value needs a label (or a key named as the axis)", path=path,
                                     field=where, fix=f"add label: NAME to {where}")
            else:
                if item is None or isinstance(item, (list, dict)):
                    raise InputError(f"a value must be a scalar or a mapping, got {item!r}", path=path, field=where)
                settings, label = {axis_name: item}, item
            check_settings({k: v for k, v in settings.items() if k != "label"}, path, where,
                           scalar=not isinstance(item, dict))
            check_label(str(label), path, where)
            read.append(AxisValue(label=str(label), settings=settings))
        labels = [v.label for v in read]
        twice = sorted({label for label in labels if labels.count(label) > 1})
        if twice:
            raise InputError(f"the value {twice[0]!r} is listed twice", path=path, field=key,
                             fix="list each value once (mapping values: distinct labels)")
        axes.append(Axis(name=str(axis_name), values=tuple(read)))
    return axes


def check_label(label: str, path: Path, where: str) -> None:
    """A label names its cell in the matrix and the report: no control or direction character (a NUL, a
    right-to-left override) that would make a row read as something else."""
    from toolbench_adapter.report.visible import escape, visible

    hidden = list(dict.fromkeys(c for c in label if visible(c) != c))
    if hidden:
        raise InputError(f"the label {visible(label)!r} holds {', '.join(map(escape, hidden))} (control or "
                         "direction characters a table would show raw)", path=path, field=where,
                         fix="write the label in visible characters (a mapping value takes label: NAME)")


def check_cell_count(axes: list[Axis], path: Path) -> None:
    """A typo in an axis must not build (or plan) millions of runs: at most MAX_CELLS."""
    count = 1
    for axis in axes:
        count *= len(axis.values)
    if count > MAX_CELLS:
        raise InputError(f"the axes make {count} cells, more than {MAX_CELLS}", path=path, field="axes",
                         fix="split the sweep into several specs, or shorten an axis")


def read_judges(value: Any, path: Path) -> list[Judge]:
    if not isinstance(value, list):  # judges: [] runs the cells unjudged (said so); a missing key is a mistake
        raise InputError("judges must be a list of judges (tba evaluate's judge settings)", path=path,
                         field="judges", fix='write judges: [{backend: openai, url: "http://HOST:PORT/v1", '
                         'model: NAME}] (or pass --judge-url / --judge-backend hf)')
    judges = []
    for index, item in enumerate(value):
        where = f"judges[{index}]"
        item = mapping(item, path, where)
        for key in item:
            if key not in JUDGE_KEYS and key != "label":
                raise InputError(f"unknown judge key {key!r}", path=path, field=f"{where}.{key}",
                                 fix=f"use {', '.join([*JUDGE_KEYS, 'label'])}")
        label = str(item.get("label") or item.get("model") or item.get("backend") or "openai")
        judges.append(Judge(label=safe_name(label), settings={k: v for k, v in item.items() if k != "label"}))
    labels = [j.label for j in judges]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise InputError(f"two judges are both labelled {twice[0]!r}", path=path, field="judges",
                         fix="give each judge its own label: NAME")
    return judges


def read_baseline(value: Any, axes: list[Axis], path: Path) -> dict[str, str] | None:
    if value is None:
        return None
    value = mapping(value, path, "baseline")
    names = [axis.name for axis in axes]
    missing = [n for n in names if n not in value]
    extra = [str(k) for k in value if k not in names]
    if missing or extra:
        raise InputError(f"the baseline must give one value of every axis ({', '.join(names)})"
                         + (f"; missing {', '.join(missing)}" if missing else "")
                         + (f"; not an axis: {', '.join(extra)}" if extra else ""), path=path, field="baseline",
                         fix="write baseline: {" + ", ".join(f"{a.name}: {a.values[0].label}" for a in axes) + "}")
    chosen = {}
    for axis in axes:
        labels = [v.label for v in axis.values]
        if str(value[axis.name]) not in labels:
            raise InputError(f"{value[axis.name]!r} is not a value of axis {axis.name}", path=path,
                             field=f"baseline.{axis.name}", fix=f"one of {', '.join(labels)}")
        chosen[axis.name] = str(value[axis.name])
    return chosen


def read_endpoints(value: Any, path: Path) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    value = mapping(value, path, "endpoints")
    endpoints = {}
    for url, limits in value.items():
        where = f"endpoints.{url}"
        limits = mapping(limits, path, where)
        for key, number in limits.items():
            if key not in ENDPOINT_KEYS:
                raise InputError(f"unknown endpoint key {key!r}", path=path, field=f"{where}.{key}",
                                 fix=f"use {', '.join(ENDPOINT_KEYS)}")
            whole = key == "max_in_flight"
            if isinstance(number, bool) or not isinstance(number, int if whole else (int, float)) or number <= 0:
                raise InputError(f"{key} must be a positive {'whole ' if whole else ''}number, got {number!r}",
                                 path=path, field=f"{where}.{key}", fix=f"write {key}: 4")
            top, why = (MAX_CONCURRENCY, CONCURRENCY_WHY) if whole else (MAX_RATE_PER_S, RATE_WHY)
            problem = number_problem(key, number, gt=0, le=top, why=why)
            if problem is not None:
                raise InputError(problem, path=path, field=f"{where}.{key}", fix=f"write {key}: 4")
        endpoints[str(url).rstrip("/")] = dict(limits)
    return endpoints


SECRET_KEYS = ("api_key",)


def recorded_settings(settings: dict) -> dict:
    """A cell's resolved settings as sweep.json keeps them: plain JSON, the API key never written."""
    return json.loads(json.dumps(redact(settings), default=str))


def settings_changes(before: dict, now: dict, limit: int = 6) -> list[str]:
    """``max_tokens 100 -> 300``, one per setting that differs (at most ``limit``, then how many more)."""
    def text(value: Any) -> str:
        return "(unset)" if value is _UNSET else json.dumps(value, ensure_ascii=False)[:60]

    keys = sorted(set(before) | set(now), key=str)
    changes = [f"{key} {text(before.get(key, _UNSET))} -> {text(now.get(key, _UNSET))}" for key in keys
               if before.get(key, _UNSET) != now.get(key, _UNSET)]
    return changes[:limit] + ([f"{len(changes) - limit} more"] if len(changes) > limit else [])


_UNSET = object()


def redact(settings: dict) -> dict:
    """Settings as recorded: an API key is never written to disk."""
    return {k: ("***" if k in SECRET_KEYS and v else v) for k, v in settings.items()}


def redact_spec(raw: dict) -> dict:
    raw = json.loads(json.dumps(raw))
    if isinstance(raw.get("base"), dict):
        raw["base"] = redact(raw["base"])
    for judge in raw.get("judges") or []:
        if isinstance(judge, dict):
            judge.update(redact(judge))
    for values in (raw.get("axes") or {}).values():
        for value in values if isinstance(values, list) else []:
            if isinstance(value, dict):
                value.update(redact(value))
    return raw
