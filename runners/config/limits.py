"""The top of every numeric range (issue 41): a number a user would never need to pass, and why.

A number past one of these is a typo or a test of the tool, and letting it through costs something: paid judge
requests (``--evaluate-times 1000000``), memory (``--resamples 999999999999``), a thread per request in flight,
or an OverflowError deep in a socket (``--judge-timeout 99999999999``). Each top has its reason beside it, said
in the message that refuses a value past it (settings_check.py reads it from the annotation's description). The
flags (runners/cli/ranges.py), config files and sweep specs (RunConfig) share these; the request-level ones
(timeouts, tries, backoff, rate, requests in flight) come from toolbench_adapter/net/limits.py, which the
judge and model clients read too.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from toolbench_adapter.net.limits import (  # noqa: F401 (re-exported: one place names every top)
    ATTEMPTS_WHY,
    CONCURRENCY_WHY,
    MAX_ATTEMPTS,
    MAX_CONCURRENCY,
    MAX_RATE_PER_S,
    MAX_SECONDS,
    MAX_WAIT_S,
    RATE_WHY,
    SECONDS_WHY,
    WAIT_WHY,
)

MAX_REPEATS = 100
REPEATS_WHY = "each repeat is one more judge request per answer (upstream judges 3 times; 100 is already 33x that)"
MAX_JUDGE_TOKENS = 100_000
JUDGE_TOKENS_WHY = "a verdict is a few dozen tokens and the evaluators ask for 1,000 at most"
MAX_TOKENS = 1_000_000
TOKENS_WHY = "more tokens than any served model's context holds"
MAX_QUERIES = 1_000_000
QUERIES_WHY = "more than ToolBench holds in all (about 126,000 queries)"
MAX_QUERY_ID = 10**9
QUERY_ID_WHY = "ToolBench's query ids are below 100,000 (StableToolBench's largest is 88,197)"
MAX_STEP = 1_000
STEP_WHY = "each step is a model call; the published numbers use 12 and upstream's code 50"
MAX_QUERY_COUNT = 10_000
QUERY_COUNT_WHY = "model calls per query; upstream stops DFSDT at 200"
MAX_OBSERVATION = 1_000_000
OBSERVATION_WHY = "characters of one tool response kept for the model (upstream keeps 1,024); more fills any context"
MAX_TEMPERATURE = 10
TEMPERATURE_WHY = "OpenAI's API takes at most 2, and far below 10 sampling is all but uniform noise"
MAX_RESAMPLES = 100_000
RESAMPLES_WHY = "bootstrap intervals settle well before 10,000 resamples; each costs time over every answer"
MAX_BODY_BYTES = 1 << 30
BODY_BYTES_WHY = "1 GiB: no tool call or chat request is that large, and the server holds a body in memory"
MAX_CONNECTIONS = 65_536
CONNECTIONS_WHY = "each connection holds a socket (a file descriptor); past 65,536 no usual system lets one open"
MAX_CELLS = 1_000  # runners/sweep/spec.py refuses a spec whose axes make more cells
CELLS_WHY = "a sweep has at most 1,000 cells"
MAX_INDENT = 32
INDENT_WHY = "spaces per JSON level: past 32 no one reads the layout"
MAX_STOP_AFTER = MAX_QUERIES
STOP_AFTER_WHY = "0 already means never stop; past the number of queries a run can hold it never fires either"


def ranged_hint(kind: type, *, why: str | None = None, **bounds: float) -> Any:
    """``Annotated[kind, Field(...)]`` with its bounds (floats finite) and ``why`` as the top's reason."""
    extra = {"allow_inf_nan": False} if kind is float else {}
    return Annotated[kind, Field(**bounds, **extra, description=why)]


# RunConfig's annotations (runners/config/run_config.py): each setting's type, range and the top's reason
Seed = ranged_hint(int, ge=0, le=2**32 - 1, why="what every RNG takes (numpy's too)")
Temperature = ranged_hint(float, ge=0, le=MAX_TEMPERATURE, why=TEMPERATURE_WHY)
QueryId = ranged_hint(int, ge=0, le=MAX_QUERY_ID, why=QUERY_ID_WHY)
QueryLimit = ranged_hint(int, ge=1, le=MAX_QUERIES, why=QUERIES_WHY)
MaxStep = ranged_hint(int, ge=1, le=MAX_STEP, why=STEP_WHY)
MaxQueryCount = ranged_hint(int, ge=1, le=MAX_QUERY_COUNT, why=QUERY_COUNT_WHY)
Rate = ranged_hint(float, gt=0, le=MAX_RATE_PER_S, why=RATE_WHY)
Seconds = ranged_hint(float, gt=0, le=MAX_SECONDS, why=SECONDS_WHY)
Attempts = ranged_hint(int, ge=1, le=MAX_ATTEMPTS, why=ATTEMPTS_WHY)
StopAfter = ranged_hint(int, ge=0, le=MAX_STOP_AFTER, why=STOP_AFTER_WHY)
Observation = ranged_hint(int, ge=1, le=MAX_OBSERVATION, why=OBSERVATION_WHY)
Tokens = ranged_hint(int, ge=1, le=MAX_TOKENS, why=TOKENS_WHY)
Concurrency = ranged_hint(int, ge=1, le=MAX_CONCURRENCY, why=CONCURRENCY_WHY)
