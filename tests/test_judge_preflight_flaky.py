"""Issue 35 minor: a judge that drops a request now and then is not refused at preflight for one unlucky test
request, and a refusal's fix says what happened (a timeout names --judge-timeout, not "start the server")."""

from __future__ import annotations

import pytest

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.judging import preflight
from toolbench_adapter.evaluation.judging.chat import ChatError
from toolbench_adapter.net.transport import FaultKind


class Judge:
    """A judge client with no URLs to list (the served-model check passes); its test requests fail as scripted."""

    name = "j @ http://127.0.0.1:9/v1"
    timeout = 5.0

    def __init__(self, faults: list[ChatError | None]):
        self.faults = list(faults)
        self.sent = 0

    def probe(self):
        self.sent += 1
        fault = self.faults.pop(0) if self.faults else None
        if fault is not None:
            raise fault
        return {"choices": [{"message": {"content": "ok"}}]}


def dropped() -> ChatError:
    return ChatError("HTTP 200 with a body that is not JSON", fault=FaultKind.NOT_JSON)


@pytest.mark.parametrize("fault", [dropped(), ChatError("reset", fault=FaultKind.CONNECTION_ERROR),
                                   ChatError("cut", fault=FaultKind.TRUNCATED_BODY),
                                   ChatError("odd shape"), ChatError("HTTP 502", fault=FaultKind.HTTP_5XX, status=502)])
def test_one_unlucky_test_request_is_asked_again_not_refused(fault):
    judge, warned = Judge([fault]), []
    preflight.preflight_judge(judge, judge.probe, warn=warned.append)
    assert judge.sent == 2 and "failed 1 of 2 test requests" in warned[0]


def test_a_judge_that_never_answers_in_shape_is_refused_after_the_tries_with_the_url_fix():
    judge = Judge([dropped()] * 5)
    with pytest.raises(InputError) as refused:
        preflight.preflight_judge(judge, judge.probe, warn=lambda _: None)
    assert judge.sent == preflight.PROBE_TRIES
    assert f"({preflight.PROBE_TRIES} tries)" in str(refused.value) and refused.value.field == "--judge-url"
    assert "OpenAI chat completion" in refused.value.fix


def test_a_timeout_is_not_asked_again_and_its_fix_names_the_timeout():
    judge = Judge([ChatError("read timed out", fault=FaultKind.TIMEOUT)])
    with pytest.raises(InputError) as refused:
        preflight.preflight_judge(judge, judge.probe, warn=lambda _: None)
    assert judge.sent == 1  # the client's own retries waited for it already
    assert refused.value.field == "--judge-timeout"
    assert "did not answer within 5 s" in refused.value.fix and "raise --judge-timeout" in refused.value.fix
    assert "start the judge server" not in str(refused.value)


def test_a_4xx_is_not_asked_again():
    judge = Judge([ChatError("HTTP 404", fault=FaultKind.HTTP_4XX, status=404)] * 3)
    with pytest.raises(InputError) as refused:
        preflight.preflight_judge(judge, judge.probe, warn=lambda _: None)
    assert judge.sent == 1 and refused.value.field == "--judge-model"
