"""Per-endpoint caps on requests in flight (toolbench_adapter/net/inflight.py): one cap per URL, held by every
HttpTransport of the process (model endpoints and judge alike), and its busy-slot accounting."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from runners.models.openai_http import OpenAIEndpoint
from tests.faulty_http import OK_BODY, FaultyServer, LoopbackServer, _read_request, _reply
from toolbench_adapter.evaluation.judging.chat import OpenAIChatClient
from toolbench_adapter.net.inflight import Cap, clear_caps, set_cap
from toolbench_adapter.net.transport import HttpTransport, RetryPolicy


class CountingServer(LoopbackServer):
    """Answers every POST after ``hold_s``, counting the requests it is serving at once (its own peak)."""

    def __init__(self, hold_s: float = 0.02, on_request=None):
        super().__init__()
        self.hold_s = hold_s
        self.on_request = on_request  # called while a request is served (the fake clock's tick)
        self.in_flight = self.peak = self.served = 0

    def _handle(self, conn: socket.socket) -> None:
        try:
            if not _read_request(conn):
                return
            with self._lock:
                self.in_flight += 1
                self.peak = max(self.peak, self.in_flight)
            if self.on_request:
                self.on_request()
            time.sleep(self.hold_s)
            with self._lock:
                self.in_flight -= 1
                self.served += 1
            conn.sendall(_reply(200, json.dumps(OK_BODY).encode()))
        finally:
            conn.close()


@pytest.fixture(autouse=True)
def no_caps_left():
    clear_caps()
    yield
    clear_caps()


def three_cells(url: str) -> list[HttpTransport]:
    """Three clients built apart, as three runs of a sweep build theirs: two model endpoints and a judge."""
    return [OpenAIEndpoint(base_url=url + "/v1", model="m").transport,
            OpenAIEndpoint(base_url=url + "/v1/", model="m").transport,
            OpenAIChatClient(url + "/v1", "judge").transport]


def hammer(transports: list[HttpTransport], threads_each: int = 4, calls_each: int = 3) -> list:
    """Every transport from ``threads_each`` threads at once, each thread ``calls_each`` POSTs."""
    results, lock = [], threading.Lock()
    start = threading.Barrier(len(transports) * threads_each)

    def worker(transport: HttpTransport) -> None:
        start.wait()
        for _ in range(calls_each):
            result = transport.post_json("chat/completions", {"messages": []})
            with lock:
                results.append(result)

    workers = [threading.Thread(target=worker, args=(t,)) for t in transports for _ in range(threads_each)]
    for worker_thread in workers:
        worker_thread.start()
    for worker_thread in workers:
        worker_thread.join()
    return results


def test_a_cap_on_a_url_holds_across_every_transport_of_the_process():
    with CountingServer() as server:
        set_cap("http://127.0.0.1:1/v1", 2)  # another endpoint's cap changes nothing here
        uncapped = hammer(three_cells(server.url), calls_each=1)
        assert all(result.ok for result in uncapped) and server.peak > 2  # 12 threads at once: more than 2
        server.peak = 0
        cap = set_cap(server.url + "/v1/", 2)  # '/' at the end or not: the same endpoint
        results = hammer(three_cells(server.url))
    assert all(result.ok for result in results) and len(results) == 36
    assert server.served == 12 + 36
    assert server.peak == 2  # never more than the cap
    assert (cap.requests, cap.peak, cap.in_flight) == (36, 2, 0)
    assert cap.waited_s > 0 and any(result.waited_s > 0 for result in results)  # the slot wait is a wait


def test_a_retry_takes_a_slot_again_and_a_failed_attempt_gives_its_slot_back():
    with FaultyServer([500, "ok"]) as server:
        cap = set_cap(server.url, 1)
        result = HttpTransport.to(server.url, policy=RetryPolicy(attempts=3, backoff_s=0.0)).post_json("", {})
    assert result.ok and result.attempts == 2
    assert (cap.requests, cap.in_flight) == (2, 0)


def test_busy_slot_seconds_through_the_transport_on_a_fake_clock():
    now = [0.0]
    with CountingServer(hold_s=0.0, on_request=lambda: now.__setitem__(0, now[0] + 5)) as server:
        cap = set_cap(server.url, 2, clock=lambda: now[0])
        transport = HttpTransport.to(server.url)
        transport.post_json("", {})  # holds a slot from t=0 to t=5 (the server's tick)
        now[0] = 10.0
        middle = cap.mark()
        transport.post_json("", {})  # t=10 to t=15
        now[0] = 20.0
    assert middle == (10.0, 5.0)
    assert cap.utilisation() == 10 / (2 * 20)  # 10 busy slot-seconds of 2 slots x 20 s
    assert cap.utilisation(since=middle) == 5 / (2 * 10)
    assert cap.requests == 2 and cap.waited_s == 0


def test_overlapping_holds_integrate_slots_over_time():
    now = [0.0]
    cap = Cap(2, clock=lambda: now[0])
    now[0] = 1.0
    cap.__enter__()  # 1 held from t=1
    now[0] = 2.0
    cap.__enter__()  # 2 held from t=2
    now[0] = 4.0
    cap.__exit__(None, None, None)
    now[0] = 5.0
    assert cap.mark() == (5.0, 1 * 1 + 2 * 2 + 1 * 1)  # one slot still held: counted up to now
    cap.__exit__(None, None, None)
    now[0] = 10.0
    assert cap.utilisation() == 6 / (2 * 10)
    assert (cap.requests, cap.peak, cap.in_flight) == (2, 2, 0)
    cap.reset()
    now[0] = 12.0
    assert cap.utilisation() == 0 and cap.requests == 0


def test_a_cap_needs_a_slot():
    with pytest.raises(ValueError, match="at least 1"):
        set_cap("http://127.0.0.1:1", 0)


def test_a_cap_with_a_rate_paces_its_holders_too():
    """A sweep's endpoints: rate_per_s: the cap paces every holder of the URL (model and judge alike) once it has a
    slot: the second of two requests in a row waits for its turn (the first passes at once)."""
    cap = set_cap("http://127.0.0.1:9/v1/", 2, rate_per_s=20)
    with cap as first:
        pass
    with cap as second:
        pass
    assert first == pytest.approx(0.0, abs=0.01) and second > 0.01
    assert Cap(2).pace is None  # no rate: no pacing
