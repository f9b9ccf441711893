"""Server answer -> observation string and status code, exactly as rapidapi_wrapper does it."""

from __future__ import annotations

import json
from typing import Any

from ..protocol import env as E
from ..server.client import ReplyKind, ServerReply


def truncate(observation: str, limit: int = E.MAX_OBSERVATION_LENGTH) -> str:
    """rapidapi_wrapper.step: longer than the limit -> the first ``limit`` characters + "..."."""
    if limit is not None and len(observation) > limit:
        return observation[:limit] + E.TRUNCATION_SUFFIX
    return observation


def render(answer: Any) -> str:
    """The pure JSON text of an answer: default separators, ASCII escapes, key order as received."""
    return json.dumps(answer)


def status_for(reply: ServerReply) -> tuple[int, bool]:
    """(status code, missing_error_key).

    Decision for answers without an ``error`` key (upstream raises KeyError and the run dies): the server
    did answer, so the step is status 0 and the observation is the answer as sent; the step records
    ``missing_error_key`` so reports can count them. A JSON body that is not an object is no valid
    answer at all: status 12 with upstream's "request invalid, data error" text (see ``coerce_answer``).
    """
    if reply.kind in (ReplyKind.TIMEOUT, ReplyKind.CONNECTION_ERROR, ReplyKind.TRUNCATED_BODY):
        return E.STATUS_TIMEOUT, False
    if reply.kind in (ReplyKind.HTTP_ERROR, ReplyKind.NOT_JSON, ReplyKind.WRONG_ENDPOINT):
        return E.STATUS_REQUEST_INVALID, False
    if not isinstance(reply.answer, dict):
        return E.STATUS_REQUEST_INVALID, False
    if "error" not in reply.answer:
        return E.STATUS_NORMAL, True
    error = reply.answer["error"]
    if isinstance(error, str):
        return E.SERVER_ERROR_STATUS.get(error, E.STATUS_NORMAL), False
    return E.STATUS_NORMAL, False


def coerce_answer(reply: ServerReply) -> Any:
    """The answer to render: a non-object JSON body is replaced by upstream's data-error dict."""
    if reply.kind is ReplyKind.OK and not isinstance(reply.answer, dict):
        return {"error": E.REQUEST_INVALID_ERROR, "response": ""}
    return reply.answer
