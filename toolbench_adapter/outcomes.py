"""How a query ended, in the words a run folder records (queries.jsonl, errors.jsonl, the manifest's totals):
defined once here, a leaf of the library. The counts, the report and the run-folder layout read them;
runners/failures.py re-exports them with what the run does about a failure (InfraFailure, which replies are
transport faults).

An outcome is "finished" (the model's own success or failure: an answer file is written) or "infra_failure"
with one of the failure kinds (no answer file: rerunning the same command redoes the query).
"""

from __future__ import annotations

FINISHED = "finished"
INFRA_FAILURE = "infra_failure"
UNKNOWN = "unknown"  # a queries.jsonl line written before outcomes were recorded (the report shows it so)

MODEL_ENDPOINT = "model_endpoint"  # the endpoint gave up after its retries, or answered something unusable
REPLAY_GAP = "replay_gap"  # the replay backend has no recorded turn for the request
TOOL_SERVER = "tool_server"  # a tool call's reply was a transport fault after the client's retries
HARNESS_ERROR = "harness_error"  # a Python exception inside the harness
# an outside agent (tba run --agent CMD) exited non-zero, could not be started, or exited 0 without one request to
# its MCP URL: its command, exit status and the tail of its stderr are the detail
OUTSIDE_AGENT = "outside_agent"
FAILURE_KINDS = (MODEL_ENDPOINT, TOOL_SERVER, REPLAY_GAP, HARNESS_ERROR, OUTSIDE_AGENT)

# the endpoint refused the request as longer than the model's context (vLLM, OpenAI: HTTP 400; hf: more tokens
# than the model's positions): the model's own limit, which no rerun changes, so not an infrastructure failure:
# the chain ends there as upstream's does at an LLM error, and the query finishes
CONTEXT_LENGTH = "context_length"
