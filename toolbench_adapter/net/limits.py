"""The top of every number a request is given (issue 41): timeouts, tries, backoff, pace and requests in flight.

The flags and settings that set them (runners/config/limits.py), the judge client's options and the model
backends' options all stop here, each with its reason, so no value reaches a socket or a sleep that it cannot
take (``--judge-timeout 99999999999`` was ``OverflowError: timestamp out of range`` in socket.settimeout).
"""

from __future__ import annotations

import math
from typing import Any

MAX_SECONDS = 86_400
SECONDS_WHY = "a day: a request still running after a day is hung, not slow"
MAX_WAIT_S = 3_600
WAIT_WHY = "an hour between two tries: longer is a stalled command, not a backoff"
MAX_ATTEMPTS = 100
ATTEMPTS_WHY = "each try may wait out a whole timeout and a backoff: 100 are hours on a dead endpoint already"
MAX_CONCURRENCY = 1_024
CONCURRENCY_WHY = "each request in flight is a thread of this process: past 1,024 the threads, not the endpoint, " \
                  "set the pace"
MAX_RATE_PER_S = 100_000
RATE_WHY = "faster than any server answers: leave the rate out for unpaced requests"


def number_problem(name: str, value: Any, *, le: float, why: str, ge: float | None = None,
                   gt: float | None = None, whole: bool = False) -> str | None:
    """What is wrong with ``value`` as the number ``name`` (finite, within its bounds), or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int)):
        return f"{name}={value!r} is not a{' whole' if whole else ''} number"
    if not math.isfinite(value):
        return f"{name} must be a finite number (got {value!r})"
    if ge is not None and value < ge:
        return f"{name} must be at least {_shown(ge)} (got {value!r})"
    if gt is not None and value <= gt:
        return f"{name} must be above {_shown(gt)} (got {value!r})"
    if value > le:
        return f"{name} must be at most {_shown(le)} (got {value!r}): {why}"
    return None


def _shown(bound: float) -> str:
    return str(int(bound)) if float(bound).is_integer() else str(bound)  # 86400, not 86400.0 or 8.64e+04
