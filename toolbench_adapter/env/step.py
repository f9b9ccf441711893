"""One environment per query attempt: a call name + raw arguments -> observation and status code.

Finish is handled locally (rapidapi_wrapper._step semantics); any other name is looked up (exactly in
strict mode, by upstream's suffix match in stb mode) and sent to the /virtual server. The state a DFSDT
branch copies is tiny (success flag and finish info); the toolset and the client are shared.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from toolbench_adapter.queryset.toolset import Route, Toolset

from ..compat import STB, Compat
from ..protocol import env as E
from ..protocol.functions import FINISH_NAME, GIVE_ANSWER, GIVE_UP
from .lookup import NameMatch, match_name
from .observation import coerce_answer, render, status_for, truncate

FINISH = FINISH_NAME


@dataclass(frozen=True)
class StepResult:
    observation: str  # what the model sees (pure JSON of the answer, truncated)
    status: int  # 0-12, protocol.env STATUS_*
    name: str  # the call name as the model wrote it
    function_name: str | None = None  # the function it resolved to (None for Finish and status 1)
    route: Route | None = None
    suffix_match_differs: bool = False  # exact lookup and upstream's endswith() would pick differently
    exact_match: str | None = None
    suffix_match: str | None = None
    source: str = "env"  # "finish", "lookup" (status 1) or the server's source ("server" when not said)
    reply_kind: str | None = None  # client ReplyKind value for server calls
    http_status: int | None = None
    latency_s: float = 0.0
    attempts: int = 0
    faults: tuple[str, ...] = ()  # the client's fault kind of every failed attempt, retried ones included
    truncated: bool = False
    missing_error_key: bool = False  # the server answered JSON without an "error" key (upstream: KeyError)
    final_answer: str | None = None  # Finish give_answer
    finish_type: str | None = None  # Finish return_type as parsed ("give_answer", "give_up_and_restart", ...)
    finish_method: str | None = None  # how parse_finish read the arguments

    @property
    def is_final(self) -> bool:
        return self.status == E.STATUS_FINAL_ANSWER

    @property
    def gave_up(self) -> bool:
        return self.status == E.STATUS_GIVE_UP


class ToolEnv:
    def __init__(self, toolset: Toolset, client: Any = None, compat: Compat = STB,
                 max_observation_length: int = E.MAX_OBSERVATION_LENGTH):
        self.toolset = toolset
        self.client = client  # ServerClient (or anything with call_route(route, tool_input) -> ServerReply)
        self.compat = compat
        self.max_observation_length = max_observation_length
        self.api_names = [n for n in toolset.names if n != FINISH]
        # the only state that changes: what a DFSDT branch copies
        self.success = 0
        self.final_answer: str | None = None
        self.finish_type: str | None = None

    def copy(self) -> ToolEnv:
        """A branch copy: shares toolset and client, copies the success flag and finish info."""
        return copy.copy(self)

    def __deepcopy__(self, memo: dict) -> ToolEnv:
        return self.copy()

    def step(self, name: str, arguments_raw: str) -> StepResult:
        if name == FINISH:
            return self._finish(arguments_raw)
        match = match_name(name, self.api_names, use_suffix=self.compat.suffix_match_names)
        if match.chosen is None:
            answer = {"error": E.NO_SUCH_FUNCTION_ERROR.format(name=name), "response": ""}
            return self._result(render(answer), E.STATUS_NO_SUCH_FUNCTION, name, match, source="lookup")
        if self.client is None:
            raise RuntimeError("ToolEnv has no server client: pass client=ServerClient(url)")
        route = self.toolset.routes[match.chosen]
        reply = self.client.call_route(route, arguments_raw)
        status, missing_error_key = status_for(reply)
        return self._result(render(coerce_answer(reply)), status, name, match, route=route,
                            source=reply.source or "server", reply_kind=reply.kind.value,
                            http_status=reply.http_status, latency_s=reply.latency_s, attempts=reply.attempts,
                            faults=tuple(getattr(reply, "faults", ())), missing_error_key=missing_error_key)

    def _finish(self, arguments_raw: str) -> StepResult:
        from ..parsers.finish import parse_finish  # written alongside; imported late to keep env light

        variant = "upstream" if self.compat.finish_fallback_heuristic else "robust"
        parsed = parse_finish(arguments_raw, variant)
        return_type, final_answer = parsed.return_type, parsed.final_answer
        if return_type is None:
            observation, status = E.FINISH_NO_RETURN_TYPE, E.STATUS_INPUT_ERROR
        elif return_type == GIVE_UP:
            observation, status = E.FINISH_GIVE_UP, E.STATUS_GIVE_UP
        elif return_type == GIVE_ANSWER and final_answer is None:
            observation, status = E.FINISH_NO_FINAL_ANSWER, E.STATUS_INPUT_ERROR
        elif return_type == GIVE_ANSWER:
            observation, status = E.FINISH_SUCCESS, E.STATUS_FINAL_ANSWER
            self.success = 1
            self.final_answer = final_answer
        else:
            observation, status = E.FINISH_BAD_RETURN_TYPE, E.STATUS_INPUT_ERROR
        if status in (E.STATUS_FINAL_ANSWER, E.STATUS_GIVE_UP):
            self.finish_type = return_type
        return self._result(observation, status, FINISH, None, source="finish",
                            final_answer=final_answer if status == E.STATUS_FINAL_ANSWER else None,
                            finish_type=return_type, finish_method=getattr(parsed, "method", None))

    def _result(self, observation: str, status: int, name: str, match: NameMatch | None, **fields: Any) -> StepResult:
        shown = truncate(observation, self.max_observation_length)
        if match is not None:
            fields.update(function_name=match.chosen, suffix_match_differs=match.differs,
                          exact_match=match.exact, suffix_match=match.suffix)
        return StepResult(observation=shown, status=status, name=name, truncated=shown != observation, **fields)
