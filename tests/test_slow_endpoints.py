"""Slow endpoints (issue 41 item 3): a server that sends its reply one byte every 0.3 s passes any timeout that
bounds each read alone, since every read gets its byte in time. A timeout bounds the whole request
(toolbench_adapter/net/deadline.py): for the model endpoint, the judge, the tool server, the simulator, the
tool server's /stats probe and `tba data fetch` alike, each request ends within its timeout and a small margin,
as a timeout like any other (the transport's ``timeout`` fault: exit 3 or a counted failure, exit 2 in a
preflight), and a reply that keeps coming fast enough still arrives whole.

The in-process tests time the calls; the commands run as subprocesses with a timeout, so a hang fails the test
instead of stopping the suite."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.faulty_http import TricklingServer
from toolbench_adapter.net.deadline import Deadline
from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.net.transport import FaultKind, HttpTransport, RetryPolicy

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TRICKLE_S = 0.3  # one byte per 0.3 s: a body of a few hundred bytes would take minutes
LIMIT_S = 1.0
MARGIN_S = 1.0  # a loaded 2-core machine: the watchdog and the test's own threads must get the CPU
MODELS = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "test"}]}
WHOLE = "the whole request"


def timed(call):
    started = time.monotonic()
    try:
        return call(), time.monotonic() - started
    except Exception as exc:  # noqa: BLE001 - the callers' own errors are what is checked
        return exc, time.monotonic() - started


@pytest.fixture()
def trickle():
    with TricklingServer(interval_s=TRICKLE_S, prompt={"/models": MODELS}) as server:
        yield server


@pytest.mark.parametrize("lean", [True, False], ids=["lean lane", "requests lane"])
@pytest.mark.parametrize("head", [False, True], ids=["body trickles", "headers trickle too"])
def test_the_transport_ends_a_trickling_reply_at_its_timeout(lean, head):
    with TricklingServer(interval_s=TRICKLE_S, head=head) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=1), timeout=LIMIT_S, lean=lean)
        result, seconds = timed(lambda: transport.post_json("", {"q": 1}))
    assert result.fault is FaultKind.TIMEOUT and WHOLE in result.detail, result
    assert LIMIT_S - 0.05 <= seconds < LIMIT_S + MARGIN_S


def test_a_connect_and_read_pair_bounds_the_request_by_its_larger_part():
    with TricklingServer(interval_s=TRICKLE_S) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=1), timeout=(0.5, 1.5))
        result, seconds = timed(lambda: transport.post_json("", {"q": 1}))
    assert result.fault is FaultKind.TIMEOUT and 1.45 <= seconds < 1.5 + MARGIN_S


def test_each_retry_is_bounded_too_and_counted_as_a_timeout():
    with TricklingServer(interval_s=TRICKLE_S) as server:
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=2, backoff_s=0), timeout=LIMIT_S)
        result, seconds = timed(lambda: transport.post_json("", {"q": 1}))
    assert result.faults == (FaultKind.TIMEOUT, FaultKind.TIMEOUT) and result.attempts == 2
    assert seconds < 2 * LIMIT_S + MARGIN_S


@pytest.mark.parametrize("lean", [True, False], ids=["lean lane", "requests lane"])
def test_a_reply_that_keeps_coming_fast_enough_arrives_whole_and_the_connection_serves_again(lean):
    with TricklingServer(interval_s=0.002) as server:  # ~200 bytes over ~0.5 s, within the 10 s limit
        transport = HttpTransport.to(server.url, policy=RetryPolicy(attempts=1), timeout=10.0, lean=lean)
        first = transport.post_json("", {"q": 1})
        second = transport.post_json("", {"q": 2})
    assert first.ok and second.ok and first.data["response"] == "fine"


@pytest.mark.parametrize("lean", [True, False], ids=["lean lane", "requests lane"])
def test_after_a_deadline_the_next_request_of_the_same_transport_goes_through(trickle, lean):
    """The watchdog shut one request's socket down: the next one (same thread, same host) must not inherit it."""
    transport = HttpTransport.to(trickle.url, policy=RetryPolicy(attempts=1), timeout=LIMIT_S, lean=lean)
    slow = transport.post_json("v1/chat/completions", {"q": 1})
    fast = transport.post_json("v1/models", {"q": 2})
    assert slow.fault is FaultKind.TIMEOUT and fast.ok and fast.data == MODELS


def test_a_session_get_is_bounded_and_a_nested_deadline_never_outlives_its_outer_one(trickle):
    result, seconds = timed(lambda: EnvCachedSession().get(trickle.url + "/slow", timeout=LIMIT_S))
    assert isinstance(result, requests.ReadTimeout) and WHOLE in str(result) and seconds < LIMIT_S + MARGIN_S
    with Deadline(0.5):
        result, seconds = timed(lambda: EnvCachedSession().get(trickle.url + "/slow", timeout=30))
    assert isinstance(result, requests.ReadTimeout) and seconds < 0.5 + MARGIN_S


def test_the_tool_server_client(trickle):
    from toolbench_adapter.server.client import ClientConfig, ReplyKind, ServerClient

    client = ServerClient(ClientConfig(url=trickle.url + "/virtual", timeout_s=LIMIT_S, attempts=1))
    reply, seconds = timed(lambda: client.call("Weather", "sky", "now", "{}"))
    assert reply.kind is ReplyKind.TIMEOUT and seconds < LIMIT_S + MARGIN_S


def test_the_judge_client_its_request_and_its_models_probe(trickle):
    from toolbench_adapter.evaluation.judging.chat import ChatError, OpenAIChatClient

    client = OpenAIChatClient(trickle.url + "/v1", "m", "k", timeout=LIMIT_S, retries=1)
    error, seconds = timed(lambda: client.chat([{"role": "user", "content": "hi"}]))
    assert isinstance(error, ChatError) and error.fault is FaultKind.TIMEOUT and seconds < LIMIT_S + MARGIN_S
    with TricklingServer(interval_s=TRICKLE_S) as everything_trickles:
        slow = OpenAIChatClient(everything_trickles.url + "/v1", "m", "k", timeout=LIMIT_S, retries=1)
        error, seconds = timed(lambda: slow.served_models(everything_trickles.url + "/v1"))
    assert isinstance(error, ChatError) and error.fault is FaultKind.TIMEOUT and seconds < LIMIT_S + MARGIN_S


def test_the_model_endpoint_its_request_and_its_models_probe(trickle):
    from runners.models.openai_http import EndpointError, OpenAIEndpoint, UnreachableEndpoint

    endpoint = OpenAIEndpoint(base_url=trickle.url + "/v1", model="m", timeout=LIMIT_S, retries=0)
    error, seconds = timed(lambda: endpoint.post("chat/completions", {"messages": []}))
    assert isinstance(error, EndpointError) and error.fault is FaultKind.TIMEOUT and seconds < LIMIT_S + MARGIN_S
    with TricklingServer(interval_s=TRICKLE_S) as everything_trickles:
        slow = OpenAIEndpoint(base_url=everything_trickles.url + "/v1", model="m", timeout=LIMIT_S, retries=0)
        error, seconds = timed(lambda: slow.served_models())
    assert isinstance(error, UnreachableEndpoint) and seconds < LIMIT_S + MARGIN_S


def test_the_simulators_endpoint(trickle):
    from toolbench_adapter.server.simulators.base import SimulatorOptions
    from toolbench_adapter.server.simulators.chat import EndpointFailed, SimulatorChat

    chat = SimulatorChat(SimulatorOptions(base_url=trickle.url + "/v1", model="m", attempts=1, timeout_s=LIMIT_S))
    error, seconds = timed(lambda: chat.complete([{"role": "user", "content": "hi"}]))
    assert isinstance(error, EndpointFailed) and error.fault is FaultKind.TIMEOUT and seconds < LIMIT_S + MARGIN_S


def test_the_tool_servers_stats_probe_of_a_run(trickle):
    from runners.execution.setup_facts import PROBE_TIMEOUT_S, _server_get

    found, seconds = timed(lambda: _server_get(trickle.url + "/virtual", "/stats"))
    assert found is None and seconds < PROBE_TIMEOUT_S + MARGIN_S


# ---- the commands of the issue, end to end -------------------------------------------------------------------


def tba(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "runners.cli", *args], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=timeout)
    return done, time.monotonic() - started


def test_data_fetch_ends_at_its_timeout_and_writes_nothing(tmp_path, trickle):
    done, _ = tba("data", "fetch", "--base-url", trickle.url, "--timeout", "2", "--groups", "G1_instruction",
                  "--out", str(tmp_path / "data"), timeout=90)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "could not fetch" in done.stderr and "no complete reply within 2 s" in done.stderr
    assert not (tmp_path / "data").exists()


def test_doctor_with_a_trickling_judge_says_so_within_its_timeout(trickle):
    done, _ = tba("doctor", "--timeout", "3", "--judge-url", trickle.url + "/v1", "--judge-model", "m", timeout=90)
    line = next(line for line in done.stdout.splitlines() if line.split()[1:2] == ["judge"])
    assert line.split()[0] == "MISSING" and "timed out" in line and "within 3 s" in line, done.stdout[-2000:]
    assert "Traceback" not in done.stderr


def test_run_against_a_trickling_model_counts_a_model_endpoint_failure(tmp_path, trickle):
    done, _ = tba("run", "--backend", "openai-completions", "--base-url", trickle.url + "/v1", "--model", "m",
                  "--backend-option", "timeout=2", "--backend-option", "retries=0", "--limit", "1", "--groups",
                  "G1_instruction", "--name", "slow", "--out-root", str(tmp_path), "--quiet", timeout=90)
    assert done.returncode == 3, done.stderr[-2000:]
    record = json.loads((tmp_path / "slow" / "queries.jsonl").read_text().splitlines()[0])
    assert (record["outcome"], record["failure_kind"]) == ("infra_failure", "model_endpoint")
    assert "timed out [timeout, 1 attempt]" in record["failure_detail"] and record["wall_seconds"] < 2 + MARGIN_S


def test_evaluate_with_a_trickling_judge_is_refused_at_its_timeout(tmp_path, trickle):
    done, _ = tba("run", "--backend", "scripted", "--limit", "1", "--groups", "G1_instruction", "--name", "r",
                  "--out-root", str(tmp_path), "--quiet")
    assert done.returncode == 0, done.stderr[-2000:]
    done, _ = tba("evaluate", str(tmp_path / "r"), "--judge-url", trickle.url + "/v1", "--judge-model", "m",
                  "--judge-timeout", "2", "--judge-option", "retries=1", timeout=90)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "field '--judge-timeout'" in done.stderr and "timed out" in done.stderr
    assert "did not answer within 2 s" in done.stderr and not (tmp_path / "r" / "eval").exists()
