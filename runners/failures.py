"""How a query ended: "finished" (the model's own success or failure) or "infra_failure" with its kind.

The failure kinds, a leaf module: the backends (models/) set MODEL_ENDPOINT, REPLAY_GAP and CONTEXT_LENGTH on
a Completion, the search (search/agent.py) turns them and tool-server faults into an InfraFailure, the run
(execution/) records it. It imports nothing from runners/; the words themselves are the library's
(toolbench_adapter/outcomes.py, which the counts and the report read too), re-exported here.

An infrastructure failure says nothing about the model: the run writes no answer file for that query (so
rerunning the same command redoes it), keeps its partial tree under failed/, and counts it apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolbench_adapter.outcomes import (  # noqa: F401 (re-exported: the run's modules import the words from here)
    CONTEXT_LENGTH,
    FAILURE_KINDS,
    FINISHED,
    HARNESS_ERROR,
    INFRA_FAILURE,
    MODEL_ENDPOINT,
    OUTSIDE_AGENT,
    REPLAY_GAP,
    TOOL_SERVER,
)


@dataclass(frozen=True)
class InfraFailure:
    kind: str  # one of FAILURE_KINDS
    detail: str

    def as_fields(self) -> dict:
        return {"outcome": INFRA_FAILURE, "failure_kind": self.kind, "failure_detail": self.detail}


FINISHED_FIELDS = {"outcome": FINISHED, "failure_kind": None, "failure_detail": None}


def model_failure(completion: Any) -> InfraFailure | None:
    """A completion whose backend failed for infrastructure reasons (error_kind set with the error); a request
    refused as too long (CONTEXT_LENGTH) is the model's limit, not one of them."""
    kind = getattr(completion, "error_kind", None)
    if completion.error and kind and kind != CONTEXT_LENGTH:
        return InfraFailure(kind, completion.error)
    return None


def is_transport_fault(reply_kind: str | None, http_status: int | None) -> bool:
    """A tool-server reply the model must not be judged on: anything but "ok", except an HTTP 4xx other
    than 429 (the server understood the request and refused it: that is the model's call)."""
    if reply_kind in (None, "ok"):
        return False
    if reply_kind == "http_error" and http_status is not None and 400 <= http_status < 500 and http_status != 429:
        return False
    return True


def tool_failure(result: Any) -> InfraFailure | None:
    """A tool call (env StepResult) whose reply was a transport fault after the client's retries."""
    if not is_transport_fault(result.reply_kind, result.http_status):
        return None
    status = f" HTTP {result.http_status}" if result.http_status else ""
    return InfraFailure(TOOL_SERVER, f"tool call {result.name}: {result.reply_kind}{status} after "
                                     f"{result.attempts} attempt(s)")
