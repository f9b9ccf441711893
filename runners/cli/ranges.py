"""The range of every numeric flag, checked while the command line is parsed (exit 2 naming the range).

A numeric flag takes ``type=`` one of these, never bare ``int`` / ``float`` (tests/test_flag_ranges.py walks
every command's parser and fails on a flag without one). Each is a type annotation checked by
runners/config/settings_check.py, so a flag says its range in the same words as a config file's setting; a
flag that is a run setting takes RunConfig's own annotation (``setting("concurrency")``), one range for both.
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from toolbench_adapter.errors import InputError

from ..config import EXAMPLES, RunConfig
from ..config.run_config import flag_label
from ..config.settings_check import check_value, describe, field_defaults, type_hints


@dataclass(frozen=True, eq=False)  # hashed by identity: argparse looks types up in a dict
class Ranged:
    """An argparse ``type``: a whole number or a number within the range its annotation says."""

    hint: Any  # Annotated[int | float, Field(ge=…, gt=…, le=…)]
    examples: tuple = ()  # (setting, value) pairs shown in the fix when the flag's default is none

    @property
    def kind(self) -> type:
        return typing.get_args(self.hint)[0]

    def bounds(self) -> dict[str, float]:
        meta = typing.get_args(self.hint)[1].metadata
        return {key: getattr(m, key) for m in meta for key in ("ge", "gt", "le", "lt")
                if getattr(m, key, None) is not None}

    def read(self, dest: str, text: str, default: Any = None) -> Any:
        """The value, or InputError naming the flag (``dest``: its setting name), the range and an example."""
        fallback = default if default is not None else self.lowest()
        try:
            value = self.kind(text)
        except ValueError:
            value = None
        problem = check_value(dest, self.hint, text if value is None else value, default=fallback,
                              examples=dict(self.examples), expected={}, in_file=False)
        if problem is not None:
            words = problem.problem if value is not None else f"{text!r} is not {self.words()}"
            raise InputError(words, field=flag_label(dest), fix=problem.fix)
        return value

    def lowest(self) -> Any:
        bounds = self.bounds()
        low = bounds.get("ge", bounds.get("gt", 0) + (1 if "gt" in bounds else 0))
        return int(low) if float(low).is_integer() else low  # shown in a fix: 1, not 1.0

    def outside(self) -> list[str]:
        """Values just out of range (and not finite): what tests/test_flag_ranges.py feeds every flag."""
        bounds, values = self.bounds(), []
        step = 1 if self.kind is int else 0.5
        if "ge" in bounds:
            values.append(bounds["ge"] - step)
        if "gt" in bounds:
            values.append(bounds["gt"])
        if "le" in bounds:
            values.append(bounds["le"] + step)
        if "lt" in bounds:
            values.append(bounds["lt"])
        if self.kind is float:
            values += [math.nan, math.inf]
        return [str(self.kind(v)) if math.isfinite(v) else str(v) for v in values]

    def words(self) -> str:
        return describe(self.hint)

    def __call__(self, text: str) -> Any:  # argparse calls it when a parser is not a TbaParser
        import argparse

        try:
            return self.read("value", text)
        except InputError as exc:
            raise argparse.ArgumentTypeError(exc.problem) from None


def bounded(kind: type = int, **bounds: float) -> Ranged:
    """``bounded(int, ge=1)``, ``bounded(float, gt=0)``, ``bounded(int, ge=0, le=65535)``; floats are finite."""
    extra = {"allow_inf_nan": False} if kind is float else {}
    return Ranged(Annotated[kind, Field(**bounds, **extra)])


def setting(name: str) -> Ranged:
    """The range of a run setting (RunConfig's annotation), for the flag that sets it."""
    hint = _annotated(type_hints(RunConfig)[name])
    if hint is None:
        raise TypeError(f"run setting {name} has no range: annotate it in RunConfig (runners/config/run_config.py)")
    example = EXAMPLES.get(name, field_defaults(RunConfig)[name])
    return Ranged(hint, examples=((name, example),))


def _annotated(hint: Any) -> Any:
    """The ``Annotated[...]`` inside ``X | None`` or ``list[X]``, else None."""
    if typing.get_origin(hint) is Annotated:
        return hint
    inner = (_annotated(arg) for arg in typing.get_args(hint) if arg is not type(None))
    return next((found for found in inner if found is not None), None)


COUNT = bounded(int, ge=1)  # repeats, attempts, requests in flight, tokens, bytes, connections
SECONDS = bounded(float, gt=0)
SEED = bounded(int, ge=0, le=2**32 - 1)
PORT = bounded(int, ge=0, le=65535)  # 0: a free one
NOT_NEGATIVE = bounded(int, ge=0)
TEMPERATURE = bounded(float, ge=0)
FRACTION = bounded(float, ge=0, le=1)  # a probability or share, e.g. an assumed pass rate
CORRELATION = bounded(float, ge=-1, le=1)
