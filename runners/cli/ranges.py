"""The range of every numeric flag, checked while the command line is parsed (exit 2 naming the range).

A numeric flag takes ``type=`` one of these, never bare ``int`` / ``float`` (tests/test_flag_ranges.py walks
every command's parser and fails on a flag without one, or without an upper bound). Each is a type annotation
checked by runners/config/settings_check.py, so a flag says its range in the same words as a config file's
setting; a flag that is a run setting takes RunConfig's own annotation (``setting("concurrency")``), one range
for both. Every range has a top a user would never need to pass, and its reason (``why``) is in the message:
a number past it is a typo or a test of the tool, and letting it through costs paid requests, memory or an
OverflowError deep in a socket (issue 41).
"""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass
from typing import Annotated, Any

from toolbench_adapter.errors import InputError

from ..config import EXAMPLES, RunConfig, limits
from ..config.limits import ranged_hint
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


def bounded(kind: type = int, *, why: str | None = None, **bounds: float) -> Ranged:
    """``bounded(int, ge=1, le=100, why=...)``, ``bounded(float, gt=0, le=DAY_S, why=...)``; floats are finite.
    ``why``: the reason for the top, said when a value is past it."""
    return Ranged(ranged_hint(kind, why=why, **bounds))


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


# the tops, each with its reason (said in the message of a value past it); RunConfig's settings have theirs in
# runners/config/limits.py, which these share where the same number means the same thing
REPEATS = bounded(int, ge=1, le=limits.MAX_REPEATS, why=limits.REPEATS_WHY)  # judgements per answer
ATTEMPTS = bounded(int, ge=1, le=limits.MAX_ATTEMPTS, why=limits.ATTEMPTS_WHY)  # tries per request or verdict
CONCURRENCY = bounded(int, ge=1, le=limits.MAX_CONCURRENCY, why=limits.CONCURRENCY_WHY)  # requests in flight
JUDGE_TOKENS = bounded(int, ge=1, le=limits.MAX_JUDGE_TOKENS, why=limits.JUDGE_TOKENS_WHY)
SECONDS = bounded(float, gt=0, le=limits.MAX_SECONDS, why=limits.SECONDS_WHY)  # a timeout
WAIT_SECONDS = bounded(float, ge=0, le=limits.MAX_WAIT_S, why=limits.WAIT_WHY)  # a backoff between tries
ANSWERS = bounded(int, ge=1, le=limits.MAX_QUERIES, why=limits.QUERIES_WHY)  # answers or queries chosen
BOOTSTRAP_RESAMPLES = bounded(int, ge=1, le=limits.MAX_RESAMPLES, why=limits.RESAMPLES_WHY)
BYTES = bounded(int, ge=1, le=limits.MAX_BODY_BYTES, why=limits.BODY_BYTES_WHY)  # a request body
CONNECTIONS = bounded(int, ge=1, le=limits.MAX_CONNECTIONS, why=limits.CONNECTIONS_WHY)
CELLS = bounded(int, ge=1, le=limits.MAX_CELLS, why=limits.CELLS_WHY)  # a sweep's cells at once
INDENT = bounded(int, ge=0, le=limits.MAX_INDENT, why=limits.INDENT_WHY)
SEED = Ranged(limits.Seed)
PORT = bounded(int, ge=0, le=65535, why="the largest TCP port")  # 0: a free one
FRACTION = bounded(float, ge=0, le=1, why="a probability or a share is at most 1")  # e.g. an assumed pass rate
CORRELATION = bounded(float, ge=-1, le=1, why="a correlation lies between -1 and 1")
