"""The one HTTP layer against real loopback servers that misbehave: each fault gets one name, the same for
the tool-server client, the model endpoint and the judge client, and only the transient ones are retried."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from email.utils import formatdate

import pytest

from runners.models.openai_http import EndpointError, OpenAIEndpoint
from tests.faulty_http import FaultyServer
from toolbench_adapter.evaluation.judging.chat import ChatError, OpenAIChatClient
from toolbench_adapter.net.ratelimit import RateLimiter
from toolbench_adapter.net.transport import (
    EndpointPool,
    FaultKind,
    HttpTransport,
    RetryPolicy,
    classify_status,
    retry_after_s,
)
from toolbench_adapter.server.client import ClientConfig, ReplyKind, ServerClient

TIMEOUT = 0.5  # only the "hang" fault ever waits this long


def via_server_client(url: str) -> str | None:
    reply = ServerClient(ClientConfig(url=url, timeout_s=TIMEOUT, attempts=3, backoff_base_s=0.01,
                                      backoff_max_s=0.02)).call("C", "tool", "api", "{}")
    assert (reply.kind is ReplyKind.OK) == (reply.fault is None)
    return reply.fault


def via_model_endpoint(url: str) -> str | None:
    endpoint = OpenAIEndpoint(base_url=url + "/v1", model="m", timeout=TIMEOUT, retries=2, backoff=0.01,
                              backoff_max=0.02)
    try:
        endpoint.post("chat/completions", {"model": "m", "messages": []})
    except EndpointError as exc:
        return exc.fault
    return None


def via_judge_client(url: str) -> str | None:
    client = OpenAIChatClient(url + "/v1", "m", timeout=TIMEOUT, retries=3, wait_min=0.01, wait_max=0.02)
    try:
        assert client.chat([{"role": "user", "content": "judge"}])["content"] == "fine"
    except ChatError as exc:
        return exc.fault
    return None


CLIENTS = pytest.mark.parametrize("call", [via_server_client, via_model_endpoint, via_judge_client],
                                  ids=["tool-server", "model-endpoint", "judge"])


@CLIENTS
@pytest.mark.parametrize("fault", ["cut", "reset", 500, 503, 429])
def test_a_transient_fault_is_retried_then_succeeds(call, fault):
    with FaultyServer([fault, "ok"]) as server:
        assert call(server.url) is None
        assert server.count == 2


@CLIENTS
@pytest.mark.parametrize(("fault", "kind"), [
    ("cut", FaultKind.TRUNCATED_BODY),
    ("reset", FaultKind.CONNECTION_ERROR),
    ("hang", FaultKind.TIMEOUT),
    (502, FaultKind.HTTP_5XX),
    (429, FaultKind.HTTP_429),
])
def test_a_transient_fault_that_persists_is_named_after_every_attempt(call, fault, kind):
    with FaultyServer([fault]) as server:
        assert call(server.url) == kind
        assert server.count == 3


@CLIENTS
@pytest.mark.parametrize(("fault", "kind"), [(404, FaultKind.HTTP_4XX), (400, FaultKind.HTTP_4XX),
                                             ("html", FaultKind.NOT_JSON)])
def test_a_lasting_fault_is_not_retried(call, fault, kind):
    with FaultyServer([fault, "ok"]) as server:
        assert call(server.url) == kind
        assert server.count == 1


@CLIENTS
def test_a_refused_connection_is_a_connection_error(call):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    assert call(f"http://127.0.0.1:{port}") == FaultKind.CONNECTION_ERROR


def test_the_result_records_every_attempt_and_the_waits():
    sleeps = []
    with FaultyServer(["cut", 503, "reset", "ok"]) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=4, backoff_s=0.5, backoff_max_s=1.5),
                                     timeout=5, sleep=sleeps.append)
        result = transport.post_json("", {"x": 1})
    assert result.ok and result.status == 200 and result.data["response"] == "fine"
    assert result.attempts == 4 and result.fault is None
    assert result.faults == (FaultKind.TRUNCATED_BODY, FaultKind.HTTP_5XX, FaultKind.CONNECTION_ERROR)
    assert sleeps == [0.5, 1.0, 1.5]  # doubling from backoff_s, capped at backoff_max_s
    assert result.latency_s > 0


def test_a_429_retry_after_in_seconds_is_waited_out_capped_by_the_policy():
    sleeps = []
    script = [(429, {"Retry-After": "3"}), (429, {"Retry-After": "120"}), (503, {"Retry-After": "2"}), 429, "ok"]
    with FaultyServer(script) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=5, backoff_s=0.25, backoff_max_s=10),
                                     timeout=5, sleep=sleeps.append)
        result = transport.post_json("", {})
    assert result.ok and result.attempts == 5
    # as asked; 120 s capped at backoff_max_s; a 503's too; without the header the doubling backoff
    assert sleeps == [3.0, 10.0, 2.0, 2.0]


def test_a_429_retry_after_as_an_http_date_is_waited_out():
    sleeps = []
    when = formatdate(time.time() + 4, usegmt=True)
    with FaultyServer([(429, {"Retry-After": when}), "ok"]) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=2, backoff_s=0.1, backoff_max_s=30),
                                     timeout=5, sleep=sleeps.append)
        assert transport.post_json("", {}).ok
    assert len(sleeps) == 1 and 2.0 < sleeps[0] <= 4.0  # the date has whole seconds: 3 to 4 s from now


def test_retry_after_values():
    assert retry_after_s("7") == 7.0 and retry_after_s(" 0 ") == 0.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0  # in the past: no wait
    assert retry_after_s("Wed, 21 Oct 2015 07:28:00 -0000", now=1445412470.0) == 10.0  # no zone: GMT
    assert retry_after_s(None) is None and retry_after_s("soon") is None and retry_after_s("-5") is None


def test_a_retry_after_on_a_lasting_fault_does_not_make_it_retried():
    sleeps = []
    with FaultyServer([(400, {"Retry-After": "1"}), "ok"]) as server:
        transport = HttpTransport.to(server.url, timeout=5, sleep=sleeps.append)
        assert transport.post_json("", {}).fault is FaultKind.HTTP_4XX
    assert sleeps == [] and server.count == 1


def test_a_failed_result_keeps_the_status_and_the_body():
    with FaultyServer([503]) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=2, backoff_s=0), timeout=5)
        result = transport.post_json("/p", {})
    assert (result.fault, result.status, result.attempts) == (FaultKind.HTTP_5XX, 503, 2)
    assert "status 503" in result.text
    assert result.describe() == f'POST {server.url}/p answered HTTP 503: {result.text} [http_5xx, 2 attempts]'


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_every_attempt_waits_for_the_rate_limiter_and_the_wait_is_recorded():
    clock = FakeClock()
    limiter = RateLimiter(2.0, burst=1, clock=clock.time, sleep=clock.sleep)
    with FaultyServer([500, 500, "ok"]) as server:
        transport = HttpTransport.to(server.url, limiter, policy=RetryPolicy(attempts=3, backoff_s=0), timeout=5)
        result = transport.post_json("", {})
    assert result.ok and result.attempts == 3
    assert result.waited_s == pytest.approx(1.0)  # the first try passes, each retry waits 0.5 s


@pytest.mark.parametrize(("status", "kind"), [
    (200, None), (429, FaultKind.HTTP_429), (500, FaultKind.HTTP_5XX), (504, FaultKind.HTTP_5XX),
    (400, FaultKind.HTTP_4XX), (404, FaultKind.HTTP_4XX), (204, FaultKind.HTTP_4XX), (302, FaultKind.HTTP_4XX)])
def test_status_classification(status, kind):
    assert classify_status(status) == kind


def test_which_faults_are_retried():
    assert {kind for kind in FaultKind if kind.transient} == {
        FaultKind.TIMEOUT, FaultKind.CONNECTION_ERROR, FaultKind.TRUNCATED_BODY, FaultKind.HTTP_5XX,
        FaultKind.HTTP_429}


def test_a_policy_needs_one_attempt():
    with pytest.raises(ValueError, match="at least 1"):
        RetryPolicy(attempts=0)


# --- the endpoint pool (issue 15: several endpoints per role) ---

def dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_the_pool_picks_the_endpoint_with_the_fewest_in_flight():
    pool = EndpointPool(["a", "b", "c"])
    first, second, third = pool.pick(), pool.pick(), pool.pick()
    assert {first.url, second.url, third.url} == {"a", "b", "c"}  # ties go round
    pool.done(second, None)
    assert pool.pick() is second  # the only one with nothing in flight
    pool.done(first, None)
    pool.done(third, None)
    assert (first.in_flight, second.in_flight, third.in_flight) == (0, 1, 0)


def test_a_transport_fault_takes_the_endpoint_out_for_the_cooldown():
    clock = FakeClock()
    pool = EndpointPool(["a", "b"], cooldown_s=30, clock=clock.time)
    a = next(e for e in pool.endpoints if e.url == "a")
    assert pool.pick(avoid=frozenset({"b"})) is a
    assert pool.done(a, FaultKind.CONNECTION_ERROR) is True  # out, and b is there to take the request
    assert [pool.pick().url for _ in range(3)] == ["b", "b", "b"]
    clock.now += 30
    assert "a" in {pool.pick().url for _ in range(2)}  # back after the cooldown


def test_an_answer_that_is_a_fault_does_not_take_the_endpoint_out():
    pool = EndpointPool(["a", "b"])
    endpoint = pool.pick()
    assert pool.done(endpoint, FaultKind.HTTP_5XX) is False and endpoint.cooldowns == 0
    assert pool.stats()[pool.endpoints.index(endpoint)]["faults"] == {"http_5xx": 1}


def test_with_every_endpoint_out_the_one_due_back_first_is_tried():
    clock = FakeClock()
    pool = EndpointPool(["a", "b"], cooldown_s=30, clock=clock.time)
    a, b = pool.endpoints
    pool.pick(), pool.pick()
    assert pool.done(a, FaultKind.TIMEOUT) is True
    clock.now += 1
    assert pool.done(b, FaultKind.TIMEOUT) is False  # nothing live to move to
    assert pool.pick() is a


def test_a_pool_refuses_no_urls_and_a_url_twice():
    with pytest.raises(ValueError, match="at least one"):
        EndpointPool([])
    with pytest.raises(ValueError, match="twice"):
        EndpointPool(["a", "a"])


def test_a_dead_endpoint_among_live_ones_loses_no_request_and_spends_no_retry():
    with FaultyServer(["ok"]) as live:
        pool = EndpointPool([dead_url(), live.url], cooldown_s=60)
        transport = HttpTransport(pool, policy=RetryPolicy(attempts=1), timeout=5)
        results = [transport.post_json("/v1/x", {"n": n}) for n in range(6)]
        assert live.count == 6
    assert all(result.ok for result in results)
    dead, alive = pool.stats()
    assert dead["failed"] == 1 and dead["faults"] == {"connection_error": 1} and dead["cooldowns"] == 1
    assert dead["served"] == 0 and alive["served"] == 6 and alive["failed"] == 0
    moved = [result for result in results if result.attempts == 2]
    assert len(moved) == 1 and moved[0].faults == (FaultKind.CONNECTION_ERROR,)


def test_a_retry_avoids_the_endpoint_that_just_failed_it():
    pool = EndpointPool(["a", "b"])
    a, b = pool.endpoints
    pool.pick(), pool.pick(), pool.done(a, FaultKind.HTTP_5XX)  # b is busier, but a failed this request
    assert pool.pick(avoid=frozenset({"a"})) is b
    assert pool.pick(avoid=frozenset({"a", "b"})) is a  # tried everywhere: any endpoint will do


def test_a_5xx_is_retried_within_the_pool():
    with FaultyServer([500]) as failing, FaultyServer(["ok"]) as fine:
        transport = HttpTransport(EndpointPool([failing.url, fine.url]), policy=RetryPolicy(attempts=2, backoff_s=0),
                                  timeout=5)
        results = [transport.post_json("", {}) for _ in range(4)]
    assert all(result.ok for result in results)
    assert failing.count + fine.count == sum(result.attempts for result in results)


def test_threads_share_a_pool_and_leave_nothing_in_flight():
    with FaultyServer(["ok"]) as one, FaultyServer(["ok"]) as two:
        pool = EndpointPool([one.url, two.url])
        transport = HttpTransport(pool, timeout=5)
        with ThreadPoolExecutor(8) as executor:
            results = list(executor.map(lambda n: transport.post_json("", {"n": n}), range(40)))
        assert one.count + two.count == 40 and one.count > 0 and two.count > 0
    assert all(result.ok for result in results)
    assert [e.in_flight for e in pool.endpoints] == [0, 0]
    assert sum(stat["served"] for stat in pool.stats()) == 40
