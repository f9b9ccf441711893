"""Issue 21 item 8: `tba serve` keeps answering when clients misbehave: half-open sockets do not exhaust its
file descriptors, a request's head or body that stops coming is cut off, and past the connection cap the idle
connection is closed (503 when every one is busy). Every socket here is on loopback, bounded, and closed."""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from runners.cli import main as tba
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.limits import ConnectionLimits, fit_to_open_files
from toolbench_adapter.server.runner import EmbeddedServer

ROOT = Path(__file__).resolve().parent.parent
OPEN_FILES = 256  # the served process's limit: small, so a few hundred sockets reach it
HALF_OPEN = 400
PARTIAL_HEAD = b"POST /virtual HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"


def host_port(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].split("/")[0].split(":")
    return host, int(port)


@contextlib.contextmanager
def sockets_to(url: str, count: int, first_bytes: bytes = b""):
    """``count`` connections to ``url``, each sending ``first_bytes`` (perhaps nothing) and then nothing more;
    all closed on the way out."""
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(host_port(url), timeout=10)
            opened.append(sock)
            if first_bytes:
                sock.sendall(first_bytes)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def limit_open_files() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def test_half_open_sockets_do_not_stop_health_from_answering(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "TBA_STB_ROOT"}
    process = subprocess.Popen([sys.executable, "-m", "runners.cli", "serve", "--port", "0", "--simulator", "schema"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env,
                               preexec_fn=limit_open_files)
    try:
        line = process.stdout.readline()
        assert line.startswith("serving "), line
        base = line.split()[1].removesuffix("/virtual")
        # more sockets than the server has descriptors: silent ones, and ones stuck in the middle of a head
        with sockets_to(base, HALF_OPEN // 2), sockets_to(base, HALF_OPEN // 2, PARTIAL_HEAD):
            health = requests.get(base + "/health", timeout=30)
            assert health.status_code == 200
            connections = health.json()["connections"]
            assert connections["max"] < OPEN_FILES and connections["evicted"] > 0
            assert requests.post(base + "/virtual", timeout=30, json={
                "category": "Data", "tool_name": "t", "api_name": "a", "tool_input": "{}", "strip": "",
                "toolbench_key": ""}).json()["error"] == ""
    finally:
        process.terminate()
        _, err = process.communicate(timeout=20)
    assert f"max connections 1024 lowered to {connections['max']}" in err
    assert "Traceback" not in err, err


@pytest.fixture
def guarded():
    server = build_virtual_server(ServerConfig(simulator="schema", save=False))
    with EmbeddedServer(create_app(server), limits=ConnectionLimits(max_connections=4, read_timeout_s=0.5)) as running:
        yield running


def closed_by_server(sock: socket.socket) -> bytes:
    """What the server sent before it closed the connection (raises socket.timeout if it never does)."""
    sock.settimeout(20)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_a_head_or_a_body_that_stops_coming_is_cut_off(guarded):
    with sockets_to(guarded.url, 1, PARTIAL_HEAD) as [slow_head], \
            sockets_to(guarded.url, 1, PARTIAL_HEAD + b"Content-Length: 100\r\n\r\n{\"cat") as [slow_body], \
            sockets_to(guarded.url, 1) as [silent]:
        assert closed_by_server(slow_head) == b""
        assert closed_by_server(slow_body) == b""
        assert closed_by_server(silent) == b""
    assert requests.get(guarded.url + "/health", timeout=10).json()["connections"]["timed_out"] == 3


def test_keep_alive_outlives_the_read_timeout(guarded):
    import http.client

    connection = http.client.HTTPConnection(*host_port(guarded.url), timeout=10)
    try:
        for _ in range(2):
            connection.request("GET", "/health")
            assert connection.getresponse().read()
            time.sleep(1.0)  # twice the read timeout, well within keep-alive: the connection stays open
    finally:
        connection.close()


def test_past_the_cap_the_idle_connection_goes_and_busy_ones_get_503(guarded):
    with sockets_to(guarded.url, 4):  # four idle connections fill the cap: /health takes the place of one
        stats = requests.get(guarded.url + "/health", timeout=10).json()["connections"]
        assert stats["evicted"] >= 1 and stats["max"] == 4
    # four requests in progress (head sent, body still coming): nothing to evict, so one more is refused
    busy = PARTIAL_HEAD + b"Content-Length: 100\r\n\r\n{"
    server = build_virtual_server(ServerConfig(simulator="schema", save=False))
    with EmbeddedServer(create_app(server), limits=ConnectionLimits(max_connections=4, read_timeout_s=30)) as slow, \
            sockets_to(slow.url, 4, busy):
        stats = slow.app.state.connections
        deadline = time.monotonic() + 20  # until the server has read the four heads (a bound, not a measure)
        while stats.snapshot()["busy"] < 4 and time.monotonic() < deadline:
            time.sleep(0.01)
        with sockets_to(slow.url, 1, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n") as [one]:
            answer = closed_by_server(one)
        assert answer.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in answer
        assert stats.snapshot()["refused"] == 1


def test_the_cap_fits_the_open_file_limit_and_bad_flags_are_exit_2(capsys):
    fitted, note = fit_to_open_files(ConnectionLimits(max_connections=1024), 256)
    # descriptors for connections, for an accept burst (the backlog) and for the rest stay within the limit
    assert fitted.max_connections + fitted.backlog < 256 and "lowered to 128" in note
    assert fit_to_open_files(ConnectionLimits(max_connections=100), 256)[1] is None
    assert fit_to_open_files(ConnectionLimits(), None) == (ConnectionLimits(), None)
    assert tba(["serve", "--port", "0", "--max-connections", "0"]) == 2
    assert "max_connections must be at least 1" in capsys.readouterr().err
    assert tba(["serve", "--port", "0", "--read-timeout", "0"]) == 2
    with pytest.raises(SystemExit):
        tba(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--max-connections" in out and "--read-timeout" in out


# ---------------------------------------------------------------- tba serve-model: bodies it cannot use

class EchoBackend:
    name = "scripted"
    model = "scripted:echo"

    def complete(self, request):
        from runners.models.base import Completion

        return Completion(text="ok", prompt_tokens=1, completion_tokens=1)


@pytest.fixture(scope="module")
def model_server():
    from runners.serving.openai_server import LoopbackServer, build_app

    with LoopbackServer(build_app(EchoBackend(), max_body_bytes=64 * 1024)) as server:
        yield server


CHAT = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(("route", "body", "field"), [
    ("chat/completions", {**CHAT, "max_tokens": "many"}, "max_tokens"),
    ("chat/completions", {**CHAT, "max_tokens": True}, "max_tokens"),
    ("chat/completions", {**CHAT, "temperature": "hot"}, "temperature"),
    ("chat/completions", {**CHAT, "stop": 5}, "stop"),
    ("chat/completions", {**CHAT, "tools": {"type": "function"}}, "tools"),
    ("chat/completions", {**CHAT, "messages": ["hi"]}, "messages[0]"),
    ("chat/completions", {**CHAT, "messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ("chat/completions", {**CHAT, "messages": [{"role": "assistant", "content": [{"type": "text"}]}],
                          "continue_final_message": True}, "continue_final_message"),
    ("completions", {"model": "echo", "prompt": "hi", "max_tokens": -1}, "max_tokens"),
    ("completions", {"model": "echo", "prompt": ["a", "b"]}, "prompt"),
])
def test_serve_model_answers_400_naming_the_field(model_server, route, body, field):
    response = requests.post(f"{model_server.url}/{route}", json=body, timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["message"].startswith(field)


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe", b"[" * 20_000 + b"]" * 20_000, b"[1, 2]"])
def test_serve_model_answers_400_to_a_body_that_is_no_json_object(model_server, raw):
    response = requests.post(f"{model_server.url}/chat/completions", data=raw, timeout=10,
                             headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "body" in response.json()["error"]["message"]


def test_serve_model_refuses_a_body_over_the_cap_with_413(model_server):
    big = {**CHAT, "messages": [{"role": "user", "content": "x" * (64 * 1024)}]}
    response = requests.post(f"{model_server.url}/chat/completions", json=big, timeout=10)
    assert response.status_code == 413 and "larger than 65536 bytes" in response.json()["error"]["message"]
    assert requests.post(f"{model_server.url}/chat/completions", json=CHAT, timeout=10).status_code == 200
    assert tba(["serve-model", "--backend", "scripted", "--max-body-bytes", "0"]) == 2
