"""The client against a real loopback stand-in for upstream: timeouts, 500s, non-JSON bodies, bodies cut
short, resets, an absent server. The caller never sees an exception; each fault becomes the status code
upstream records. (tests/test_transport.py checks that the three HTTP clients name each fault alike.)"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from tests.faulty_http import FaultyServer
from toolbench_adapter.env import ToolEnv
from toolbench_adapter.net.ratelimit import RateLimiter
from toolbench_adapter.queryset.queries import Query
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.server.client import ClientConfig, ReplyKind, ServerClient, virtual_url
from toolbench_adapter.server.standin import Reply, StandInServer

OK_ANSWER = {"error": "", "response": {"temp": 21}}


def respond(exchange):
    tool_input = exchange.json()["tool_input"]
    return {
        "slow": Reply(body=OK_ANSWER, delay_s=1.0),
        "boom": Reply(status=500, body="Internal Server Error", content_type="text/plain"),
        "html": Reply(body="<html>not json</html>", content_type="text/html"),
        "gone": Reply(status=404, body={"detail": "Not Found"}),
    }.get(tool_input, Reply(body=OK_ANSWER))


@pytest.fixture(scope="module")
def upstream():
    with StandInServer(respond) as server:
        yield server


def client_for(url, **overrides) -> ServerClient:
    # timeouts only where a test wants one: a busy CI machine must not turn ordinary answers into timeouts
    settings = dict(timeout_s=10, attempts=2, backoff_base_s=0.01, backoff_max_s=0.02)
    settings.update(overrides)
    return ServerClient(ClientConfig(url=url + "/virtual", **settings))


TOOLSET = build_toolset(Query(query_id=7, group="G1_instruction", query="q", api_list=[
    {"category_name": "Weather", "tool_name": "Sky", "api_name": "now", "required_parameters": [],
     "optional_parameters": []}]))


def step(client, tool_input):
    return ToolEnv(TOOLSET, client).step("now_for_sky", tool_input)


def test_upstream_payload_and_header(upstream):
    reply = client_for(upstream.url, toolbench_key="k123").call("Weather", "sky", "now", '{"a": 1}')
    assert reply.kind is ReplyKind.OK and reply.answer == OK_ANSWER and reply.attempts == 1
    sent = upstream.exchanges[-1]
    assert sent.path == "/virtual"
    assert sent.json() == {"category": "Weather", "tool_name": "sky", "api_name": "now", "tool_input": '{"a": 1}',
                           "strip": "truncate", "toolbench_key": "k123"}
    assert sent.headers.get("toolbench_key") == "k123"


def test_timeout_is_status_5_after_retries(upstream):
    before = len(upstream.exchanges)
    result = step(client_for(upstream.url, timeout_s=0.3), "slow")
    assert result.status == 5 and result.reply_kind == "timeout" and result.attempts == 2
    assert result.observation == '{"error": "Timeout error...", "response": ""}'
    assert len(upstream.exchanges) - before == 2


def test_500_is_retried_then_status_12(upstream):
    before = len(upstream.exchanges)
    result = step(client_for(upstream.url, attempts=3), "boom")
    assert result.status == 12 and result.http_status == 500 and result.attempts == 3
    assert result.observation == '{"error": "request invalid, data error. status_code=500", "response": ""}'
    assert len(upstream.exchanges) - before == 3


def test_404_is_not_retried_and_is_status_12(upstream):
    result = step(client_for(upstream.url, attempts=3), "gone")
    assert result.status == 12 and result.attempts == 1
    assert json.loads(result.observation)["error"] == "request invalid, data error. status_code=404"


def test_non_json_body_is_status_12(upstream):
    result = step(client_for(upstream.url), "html")
    assert result.status == 12 and result.reply_kind == "not_json"
    assert result.observation == '{"error": "request invalid, data error", "response": ""}'


def test_unreachable_server_is_status_5():
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = step(client_for(f"http://127.0.0.1:{port}"), "{}")
    assert result.status == 5 and result.reply_kind == "connection_error" and result.attempts == 2


def test_a_body_cut_short_is_retried_then_answered():
    with FaultyServer(["cut", "ok"]) as server:
        result = step(client_for(server.url, attempts=3), "{}")
        assert server.count == 2
    assert result.status == 0 and result.reply_kind == "ok" and result.attempts == 2


def test_a_body_cut_short_every_time_is_status_5_truncated_body():
    with FaultyServer(["cut"]) as server:
        client = client_for(server.url, attempts=3)
        reply = client.call("Weather", "sky", "now", "{}")
        result = step(client, "{}")
        assert server.count == 6
    assert reply.kind is ReplyKind.TRUNCATED_BODY and reply.faults == ("truncated_body",) * 3
    assert "IncompleteRead" in reply.detail
    assert result.status == 5 and result.reply_kind == "truncated_body" and result.attempts == 3
    assert result.observation == '{"error": "Timeout error...", "response": ""}'


def test_a_reset_then_a_429_are_retried_and_recorded():
    with FaultyServer(["reset", 429, "ok"]) as server:
        reply = client_for(server.url, attempts=3).call("Weather", "sky", "now", "{}")
    assert reply.kind is ReplyKind.OK and reply.attempts == 3 and reply.fault is None
    assert reply.faults == ("connection_error", "http_429")


def test_many_threads_share_one_client(upstream):
    client = client_for(upstream.url)
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(step(client, "{}").status)
        except Exception as exc:  # noqa: BLE001 - the point is that none escapes
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and results == [0] * 40


def test_virtual_url():
    assert virtual_url("http://127.0.0.1:8080") == "http://127.0.0.1:8080/virtual"
    assert virtual_url("http://127.0.0.1:8080/") == "http://127.0.0.1:8080/virtual"
    assert virtual_url("http://host:1/rapidapi") == "http://host:1/rapidapi"


class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_rate_limiter_paces_after_the_burst():
    clock = FakeClock()
    limiter = RateLimiter(2.0, burst=2, clock=clock.time, sleep=clock.sleep)
    waits = [limiter.acquire() for _ in range(4)]
    assert waits[:2] == [0.0, 0.0]  # the burst passes at once
    assert waits[2] == pytest.approx(0.5) and waits[3] == pytest.approx(0.5)
    clock.now += 10  # an idle spell refills only up to the burst
    assert [limiter.acquire() for _ in range(3)][:2] == [0.0, 0.0]


def test_rate_limiter_queues_concurrent_callers():
    clock = FakeClock()
    limiter = RateLimiter(10.0, burst=1, clock=clock.time, sleep=lambda s: clock.slept.append(s))
    threads = [threading.Thread(target=limiter.acquire) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # no time passes on the fake clock: callers queue behind each other at 0.1 s spacing
    assert sorted(round(s, 6) for s in clock.slept) == [0.1, 0.2, 0.3, 0.4]


def test_unlimited_limiter_never_waits():
    assert RateLimiter(None).acquire() == 0.0
