"""The two settings: --constrain off|schema and --on-invalid observe|reask:N (defaults: upstream's behaviour)."""

from __future__ import annotations

import re

from ..errors import InputError

CONSTRAIN_CHOICES = ("off", "schema")
OBSERVE = "observe"
REASK = re.compile(r"reask:(?P<n>[1-9][0-9]*)")
ON_INVALID_HELP = "observe (upstream: the environment answers the invalid call) or reask:N (ask again, at most N times)"


def reask_limit(on_invalid: str) -> int:
    """0 for observe, N for reask:N; InputError naming the fix for anything else."""
    if on_invalid == OBSERVE:
        return 0
    match = REASK.fullmatch(str(on_invalid))
    if match is None:
        raise InputError(f"on_invalid {on_invalid!r} is neither observe nor reask:N", field="on_invalid",
                         fix="write --on-invalid observe, or e.g. --on-invalid reask:2 (N >= 1)")
    return int(match.group("n"))
