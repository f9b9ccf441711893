"""How a query ended: "finished" (the model's own success or failure) or "infra_failure" with its kind.

The one vocabulary of failure kinds, a leaf module: the backends (models/) set MODEL_ENDPOINT, REPLAY_GAP and
CONTEXT_LENGTH on a Completion, the search (search/agent.py) turns them and tool-server faults into an
InfraFailure, the run (execution/) records it. It imports nothing from runners/.

An infrastructure failure says nothing about the model: the run writes no answer file for that query (so
rerunning the same command redoes it), keeps its partial tree under failed/, and counts it apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MODEL_ENDPOINT = "model_endpoint"  # the endpoint gave up after its retries, or answered something unusable
REPLAY_GAP = "replay_gap"  # the replay backend has no recorded turn for the request
# the endpoint refused the request as longer than the model's context (vLLM, OpenAI: HTTP 400; hf: more tokens
# than the model's positions): the model's own limit, which no rerun changes, so not an infrastructure failure:
# the chain ends there as upstream's does at an LLM error, and the query finishes
CONTEXT_LENGTH = "context_length"

FINISHED = "finished"
INFRA_FAILURE = "infra_failure"

TOOL_SERVER = "tool_server"  # a tool call's reply was a transport fault after the client's retries
HARNESS_ERROR = "harness_error"  # a Python exception inside the harness
FAILURE_KINDS = (MODEL_ENDPOINT, TOOL_SERVER, REPLAY_GAP, HARNESS_ERROR)


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
