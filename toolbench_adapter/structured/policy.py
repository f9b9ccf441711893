"""The two settings: --constrain off|schema and --on-invalid observe|reask:N (defaults: upstream's behaviour)."""

from __future__ import annotations

import re

from ..errors import InputError

CONSTRAIN_CHOICES = ("off", "schema")
OBSERVE = "observe"
REASK = re.compile(r"reask:(?P<n>[0-9]+)")
# re-asks of one reply: each is a full model call, and past a few a model that keeps failing does not recover
# (reask:1000000 made 1,338 calls in a minute for one query); a search's call cap bounds them per query too
REASK_MAX = 10
ON_INVALID_HELP = (f"observe (upstream: the environment answers the invalid call) or reask:N (ask again, at most N "
                   f"times, N from 1 to {REASK_MAX})")


def reask_limit(on_invalid: str) -> int:
    """0 for observe, N for reask:N; InputError naming the fix for anything else."""
    if on_invalid == OBSERVE:
        return 0
    match = REASK.fullmatch(str(on_invalid))
    if match is None:
        raise InputError(f"on_invalid {on_invalid!r} is neither observe nor reask:N", field="on_invalid",
                         fix=f"write --on-invalid observe, or e.g. --on-invalid reask:2 (N from 1 to {REASK_MAX})")
    n = int(match.group("n"))
    if not 1 <= n <= REASK_MAX:
        raise InputError(f"on_invalid {on_invalid!r}: N = {n} is out of range (1 to {REASK_MAX})", field="on_invalid",
                         fix=f"write e.g. --on-invalid reask:2 (N from 1 to {REASK_MAX}), or --on-invalid observe")
    return n
