"""The lean HTTP lane (toolbench_adapter/net/lean_http.py) against real loopback servers: the request requests would
send, every fault named as the requests lane names it, kept-alive connections that survive a server's idle
close, and requests itself wherever requests would add something (a proxy, netrc, cookies, a redirect).

Each comparison runs the same script against a fresh server once per lane (``HttpTransport(lean=...)``); a spy
on ``requests.Session.send`` shows which lane sent what."""

from __future__ import annotations

import base64
import gzip
import json
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import requests
from requests.utils import DEFAULT_ACCEPT_ENCODING

from tests.faulty_http import OK_BODY, FaultyServer, LoopbackServer
from toolbench_adapter.net.transport import FaultKind, HttpResult, HttpTransport, RetryPolicy

BODY = {"category": "Weather", "tool_name": "sky", "api_name": "now", "tool_input": '{"city": "Zürich"}'}
ANSWER = {"error": "", "response": "fine"}


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch, tmp_path):
    """No proxy and no netrc file from the machine running the tests: each test sets the ones it wants."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


@pytest.fixture
def requests_sends(monkeypatch) -> list[str]:
    """The URL of every request the requests lane sent."""
    sent: list[str] = []
    real = requests.Session.send

    def spy(self, request, **options):
        sent.append(request.url)
        return real(self, request, **options)

    monkeypatch.setattr(requests.Session, "send", spy)
    return sent


@dataclass
class Seen:
    line: str  # the request line
    headers: list[tuple[str, str]]  # (lower-case name, value), in order
    body: bytes

    def header(self, name: str) -> str | None:
        return dict(self.headers).get(name)


def reply(status: int = 200, body: bytes = json.dumps(ANSWER).encode(), headers: dict | None = None,
          length: int | None = None, version: str = "HTTP/1.1") -> bytes:
    head = {"Content-Type": "application/json", **(headers or {})}
    if length is not False:
        head["Content-Length"] = str(len(body) if length is None else length)
    lines = "".join(f"{name}: {value}\r\n" for name, value in head.items())
    return f"{version} {status} Status\r\n{lines}\r\n".encode("latin-1") + body


class RawServer(LoopbackServer):
    """A loopback HTTP/1.1 server on raw sockets that keeps connections open. ``answer(request, conn)`` writes
    the reply (or misbehaves) and says what next: "keep" (read the next request), "close" (close now; an RST
    if the answer set SO_LINGER 0), "hold" (read nothing more, close when the server stops)."""

    def __init__(self, answer: Callable[[Seen, socket.socket], str]):
        super().__init__()
        self.answer = answer
        self.seen: list[Seen] = []
        self.connections = 0  # accepted
        self.eofs = 0  # connections the client closed

    def _handle(self, conn: socket.socket) -> None:
        with self._lock:
            self.connections += 1
        reader = conn.makefile("rb")
        try:
            while True:
                line = reader.readline()
                if not line:
                    with self._lock:
                        self.eofs += 1
                    return
                headers = []
                while (raw := reader.readline()) not in (b"\r\n", b""):
                    name, _, value = raw.decode("latin-1").partition(":")
                    headers.append((name.strip().lower(), value.strip()))
                request = Seen(line.decode("latin-1").strip(), headers,
                               reader.read(int(dict(headers).get("content-length", 0))))
                with self._lock:
                    self.seen.append(request)
                what = self.answer(request, conn)
                if what == "hold":
                    self._stop.wait(30)
                if what != "keep":
                    return
        except OSError:
            pass
        finally:
            reader.close()
            conn.close()


def answering(payload: bytes, then: str = "keep") -> Callable[[Seen, socket.socket], str]:
    def answer(request: Seen, conn: socket.socket) -> str:
        conn.sendall(payload)
        return then
    return answer


def transport(url: str, lean: bool, **options) -> HttpTransport:
    settings = dict(policy=RetryPolicy(attempts=3, backoff_s=0), timeout=2.0, sleep=lambda s: None)
    return HttpTransport.to(url, lean=lean, **{**settings, **options})


def facts(result: HttpResult) -> tuple:
    """All of a result but its timings and the exception text (the lanes word that differently)."""
    return (result.fault, result.status, result.data, result.attempts, result.faults, result.text,
            dict(result.headers), result.error_data)


def both_lanes(serve: Callable[[], RawServer | FaultyServer], requests_sends: list[str], path: str = "",
               body=BODY, **options) -> tuple[HttpResult, HttpResult]:
    """One POST per lane, each to a fresh server; the lean one sent nothing through requests."""
    results = []
    for lean in (True, False):
        before = len(requests_sends)
        with serve() as server:
            sender = transport(server.url, lean, **options)
            results.append(sender.post_json(path, body))
            sender.close()
        assert (len(requests_sends) - before == 0) is lean
    return results[0], results[1]


# --- faults: the same names, statuses, bodies and attempts in both lanes ---

@pytest.mark.parametrize(("script", "fault", "status", "attempts"), [
    (["cut"], FaultKind.TRUNCATED_BODY, None, 3),
    (["reset"], FaultKind.CONNECTION_ERROR, None, 3),
    (["hang"], FaultKind.TIMEOUT, None, 3),
    ([502], FaultKind.HTTP_5XX, 502, 3),
    ([429], FaultKind.HTTP_429, 429, 3),
    ([404], FaultKind.HTTP_4XX, 404, 1),
    (["html"], FaultKind.NOT_JSON, 200, 1),
    (["cut", "reset", "ok"], None, 200, 3),
])
def test_the_faulty_servers_faults_are_named_alike(requests_sends, script, fault, status, attempts):
    lean, plain = both_lanes(lambda: FaultyServer(script), requests_sends, timeout=0.3)
    assert facts(lean) == facts(plain)
    assert (lean.fault, lean.status, lean.attempts) == (fault, status, attempts)
    assert lean.data == (OK_BODY if fault is None else None)
    if fault is FaultKind.HTTP_4XX:
        assert lean.error_data == {"detail": "status 404"}


def test_the_lean_lanes_details_say_what_happened():
    with FaultyServer(["cut", "reset", "hang"]) as server:
        result = transport(server.url, True, timeout=0.3).post_json("", BODY)
    assert result.faults == (FaultKind.TRUNCATED_BODY, FaultKind.CONNECTION_ERROR, FaultKind.TIMEOUT)
    assert result.detail == "no complete reply within 0.3 s (the whole request: connect, send, headers and body)"
    with FaultyServer(["cut"]) as server:
        detail = transport(server.url, True, policy=RetryPolicy(attempts=1)).post_json("", BODY).detail
    assert "IncompleteRead" in detail and "more expected" in detail
    with FaultyServer(["reset"]) as server:
        detail = transport(server.url, True, policy=RetryPolicy(attempts=1)).post_json("", BODY).detail
    assert detail.startswith("Connection aborted: ConnectionResetError(")


def broken_chunk(request, conn):
    conn.sendall(reply(length=False, headers={"Transfer-Encoding": "chunked"}).split(b"\r\n\r\n")[0]
                 + b"\r\n\r\nzz\r\n{}\r\n0\r\n\r\n")
    return "close"


def chunk_cut_short(request, conn):
    conn.sendall(reply(length=False, headers={"Transfer-Encoding": "chunked"}).split(b"\r\n\r\n")[0]
                 + b'\r\n\r\n40\r\n{"error": ')
    return "close"


def body_stalls(request, conn):
    conn.sendall(reply(length=100)[:-10])
    return "hold"


def closes_before_replying(request, conn):
    return "close"


def resets_before_replying(request, conn):
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return "close"


ENCODED = json.dumps(ANSWER).encode()
CHUNKED = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
           + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (ENCODED[:5], ENCODED[5:])) + b"0\r\n\r\n")
RAW_CASES = {
    "broken chunk": (broken_chunk, FaultKind.TRUNCATED_BODY, None, 3),
    "chunk cut short": (chunk_cut_short, FaultKind.TRUNCATED_BODY, None, 3),
    "body stalls": (body_stalls, FaultKind.TIMEOUT, None, 3),
    "closed before a reply": (closes_before_replying, FaultKind.CONNECTION_ERROR, None, 3),
    "reset before a reply": (resets_before_replying, FaultKind.CONNECTION_ERROR, None, 3),
    "bad gzip": (answering(reply(body=b"\x1f\x8b not gzip", headers={"Content-Encoding": "gzip"})),
                 FaultKind.TRUNCATED_BODY, None, 3),
    "gzip": (answering(reply(body=gzip.compress(ENCODED), headers={"Content-Encoding": "gzip"})), None, 200, 1),
    "deflate": (answering(reply(body=zlib.compress(ENCODED), headers={"Content-Encoding": "deflate"})), None, 200, 1),
    "chunked": (answering(CHUNKED), None, 200, 1),
    "utf-16": (answering(reply(body=json.dumps({"response": "Zürich"}).encode("utf-16"),
                               headers={"Content-Type": "application/json; charset=utf-16"})), None, 200, 1),
    "no content type": (answering(reply(body=json.dumps({"response": "Zürich"}, ensure_ascii=False).encode(),
                                        headers={"Content-Type": ""})), None, 200, 1),
    "json 400": (answering(reply(400, json.dumps({"error": {"message": "too long"}}).encode())),
                 FaultKind.HTTP_4XX, 400, 1),
    "latin-1 text 500": (answering(reply(500, "Fehler: Größe".encode("latin-1"),
                                         headers={"Content-Type": "text/plain"})), FaultKind.HTTP_5XX, 500, 3),
    "repeated headers": (answering(reply(headers={"X-Tba-Source": "cache", "x-tba-source": "live"})), None, 200, 1),
}


@pytest.mark.parametrize("case", list(RAW_CASES))
def test_replies_and_faults_read_alike(requests_sends, case):
    answer, fault, status, attempts = RAW_CASES[case]
    lean, plain = both_lanes(lambda: RawServer(answer), requests_sends, timeout=0.3)
    assert facts(lean) == facts(plain)
    assert (lean.fault, lean.status, lean.attempts) == (fault, status, attempts)
    if case in ("gzip", "deflate", "chunked"):
        assert lean.data == ANSWER
    if case in ("utf-16", "no content type"):
        assert lean.data == {"response": "Zürich"}
    if case == "json 400":
        assert lean.error_data == {"error": {"message": "too long"}}
    if case == "latin-1 text 500":
        assert lean.text == "Fehler: Größe"
    if case == "repeated headers":
        assert lean.headers["x-tba-source"] == "cache, live"


def test_a_refused_connection_is_a_connection_error_in_both_lanes(requests_sends):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    lean, plain = (transport(url, flag).post_json("", BODY) for flag in (True, False))
    assert facts(lean) == facts(plain)
    assert (lean.fault, lean.attempts) == (FaultKind.CONNECTION_ERROR, 3)
    assert "Connection refused" in lean.detail
    assert requests_sends == [url + "/"] * 3  # the requests lane's only: the URL as requests prepares it


def test_a_connect_timeout_is_a_timeout_in_both_lanes(requests_sends):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        address = listener.getsockname()
        fillers = []
        for _ in range(8):  # fill the accept queue: the next connection attempt gets no answer
            filler = socket.socket()
            filler.settimeout(0.2)
            fillers.append(filler)
            try:
                filler.connect(address)
            except TimeoutError:
                break
        else:
            pytest.skip("this kernel accepts every connection to a full backlog")
        url = f"http://127.0.0.1:{address[1]}"
        results = [transport(url, flag, timeout=(0.2, 5.0), policy=RetryPolicy(attempts=2, backoff_s=0))
                   .post_json("", BODY) for flag in (True, False)]
        for filler in fillers:
            filler.close()
    assert facts(results[0]) == facts(results[1])
    assert (results[0].fault, results[0].attempts) == (FaultKind.TIMEOUT, 2)
    assert results[0].detail == "Connection to 127.0.0.1 timed out. (connect timeout=0.2)"


def test_a_body_requests_refuses_is_refused_alike(requests_sends):
    with FaultyServer(["ok"]) as server:
        lean, plain = (transport(server.url, flag).post_json("", {"x": float("nan")}) for flag in (True, False))
        assert server.count == 0
    assert facts(lean) == facts(plain) and lean.detail == plain.detail
    assert lean.detail == "Out of range float values are not JSON compliant" and lean.fault is FaultKind.CONNECTION_ERROR


# --- what goes on the wire ---

@pytest.mark.parametrize(("own", "per_request"), [
    ({}, None),
    ({"Authorization": "Bearer t"}, {"toolbench_key": "k1", "Accept": "application/json"}),
    ({"User-Agent": "mine"}, {"Connection": None, "content-type": "application/json; charset=utf-8"}),
])
def test_the_request_on_the_wire_is_the_one_requests_sends(requests_sends, own, per_request):
    with RawServer(answering(reply())) as server:
        for lean in (True, False):
            assert transport(server.url, lean, headers=own).post_json("/virtual", BODY, headers=per_request).ok
    ours, theirs = server.seen
    assert (ours.line, sorted(ours.headers), ours.body) == (theirs.line, sorted(theirs.headers), theirs.body)
    assert ours.line == "POST /virtual HTTP/1.1"
    assert ours.body == json.dumps(BODY).encode()
    expected = {"host": f"127.0.0.1:{server.port}", "user-agent": f"python-requests/{requests.__version__}",
                "accept-encoding": DEFAULT_ACCEPT_ENCODING, "accept": "*/*", "connection": "keep-alive",
                "content-type": "application/json", "content-length": str(len(ours.body))}
    expected.update({name.lower(): value for name, value in {**own, **(per_request or {})}.items()})
    assert dict(ours.headers) == {name: value for name, value in expected.items() if value is not None}


def test_a_url_without_a_path_posts_to_the_root():
    with RawServer(answering(reply())) as server:
        assert transport(server.url, True).post_json("", BODY).ok
    assert server.seen[0].line == "POST / HTTP/1.1"


# --- kept-alive connections ---

def test_calls_reuse_one_connection_per_thread(requests_sends):
    with RawServer(answering(reply())) as server:
        sender = transport(server.url, True)
        results = [sender.post_json("", {"n": n}) for n in range(5)]

        def work():
            for n in range(3):
                results.append(sender.post_json("", {"n": n}))
        threads = [threading.Thread(target=work) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.connections == 4  # this thread's one, and one per other thread
    assert [r.data for r in results] == [ANSWER] * 14 and requests_sends == []


def closes_when_idle(request, conn):
    conn.sendall(reply())  # keep-alive as far as the client knows
    conn.shutdown(socket.SHUT_RDWR)  # then the server's idle timeout closes it
    return "close"


@pytest.mark.parametrize("lean", [True, False])
def test_a_connection_the_server_closed_while_idle_is_replaced_without_a_fault(lean):
    with RawServer(closes_when_idle) as server:
        sender = transport(server.url, lean, policy=RetryPolicy(attempts=1))
        first = sender.post_json("", BODY)
        deadline = time.monotonic() + 2
        while server.eofs == 0 and time.monotonic() < deadline:  # our side has read nothing yet: wait for its FIN
            time.sleep(0.01)
        time.sleep(0.05)
        second = sender.post_json("", BODY)
        assert server.connections == 2 and len(server.seen) == 2
    assert first.ok and second.ok and second.attempts == 1 and second.faults == ()


@pytest.mark.parametrize("closing", [reply(headers={"Connection": "close"}), reply(version="HTTP/1.0")],
                         ids=["connection-close", "http-1.0"])
def test_a_reply_that_closes_is_not_reused(requests_sends, closing):
    # the server holds the connection open without reading it: a client that reused it would time out
    with RawServer(answering(closing, then="hold")) as server:
        sender = transport(server.url, True, timeout=0.5, policy=RetryPolicy(attempts=1))
        results = [sender.post_json("", BODY) for _ in range(3)]
        assert server.connections == 3
    assert [(r.fault, r.data) for r in results] == [(None, ANSWER)] * 3 and requests_sends == []


def test_close_closes_the_lean_connections():
    with RawServer(answering(reply())) as server:
        sender = transport(server.url, True)
        assert sender.post_json("", BODY).ok
        sender.close()
        deadline = time.monotonic() + 2
        while server.eofs == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.eofs == 1
        assert sender.post_json("", BODY).ok and server.connections == 2  # a new one after close()


def test_retry_after_is_waited_out_in_the_lean_lane(requests_sends):
    sleeps = []
    script = [(429, {"Retry-After": "3"}), (503, {"Retry-After": "2"}), "ok"]
    with FaultyServer(script) as server:
        result = transport(server.url, True, sleep=sleeps.append, policy=RetryPolicy(attempts=3, backoff_s=0.1,
                                                                                       backoff_max_s=10))
        result = result.post_json("", BODY)
    assert result.ok and result.attempts == 3 and sleeps == [3.0, 2.0] and requests_sends == []


# --- where requests sends it ---

def test_a_proxy_from_the_environment_sends_it_through_requests(monkeypatch, requests_sends):
    with socket.socket() as sock:  # the target: nobody listens there, only the proxy can answer
        sock.bind(("127.0.0.1", 0))
        target = f"http://127.0.0.1:{sock.getsockname()[1]}/virtual"
    with RawServer(answering(reply())) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        result = transport(target, True).post_json("", BODY)
        assert result.ok and result.data == ANSWER
        assert [seen.line for seen in proxy.seen] == [f"POST {target} HTTP/1.1"]
        assert requests_sends == [target]
        with RawServer(answering(reply())) as direct:  # NO_PROXY names the host: straight there, lean
            monkeypatch.setenv("NO_PROXY", "127.0.0.1")
            assert transport(direct.url, True).post_json("", BODY).ok
            assert len(direct.seen) == 1 and len(proxy.seen) == 1 and requests_sends == [target]


def test_a_netrc_entry_sends_it_through_requests_with_the_credentials(monkeypatch, tmp_path, requests_sends):
    with RawServer(answering(reply())) as server:
        assert transport(server.url, True).post_json("", BODY).ok  # no netrc: lean, no credentials
        netrc = tmp_path / "netrc"
        netrc.write_text("machine 127.0.0.1 login user password secret\n")
        monkeypatch.setenv("NETRC", str(netrc))
        assert transport(server.url, True).post_json("", BODY).ok  # a new transport reads the environment anew
    assert [seen.header("authorization") for seen in server.seen] == [
        None, "Basic " + base64.b64encode(b"user:secret").decode()]
    assert requests_sends == [server.url + "/"]


def test_a_reply_that_sets_a_cookie_fills_the_jar_and_later_calls_go_through_requests(requests_sends):
    def answer(request, conn):
        conn.sendall(reply(headers={"Set-Cookie": "sid=abc; Path=/"} if len(server.seen) == 1 else None))
        return "keep"
    with RawServer(answer) as server:
        sender = transport(server.url, True)
        results = [sender.post_json("", BODY) for _ in range(2)]
    assert all(result.ok for result in results)
    assert sender.session().cookies.get("sid") == "abc"
    assert [seen.header("cookie") for seen in server.seen] == [None, "sid=abc"]
    assert requests_sends == [server.url + "/"]  # the second call only


def test_a_redirect_is_followed_by_requests(requests_sends):
    def answer(request, conn):
        if request.line.startswith("POST /a "):
            conn.sendall(reply(307, b"", headers={"Location": "/b"}))
        else:
            conn.sendall(reply(body=json.dumps({"at": request.line}).encode()))
        return "keep"
    with RawServer(answer) as server:
        sender = transport(server.url, True)
        first, second = sender.post_json("/a", BODY), sender.post_json("/a", BODY)
    assert first.data == second.data == {"at": "POST /b HTTP/1.1"}
    # the lean lane's POST /a met the redirect; requests sent it again and followed it, then sends this URL
    assert [seen.line.split()[1] for seen in server.seen] == ["/a", "/a", "/b", "/a", "/b"]
    assert all(seen.body == json.dumps(BODY).encode() for seen in server.seen)
    assert requests_sends == [server.url + "/a", server.url + "/b"] * 2


def test_the_flag_sends_everything_through_requests(requests_sends):
    with RawServer(answering(reply())) as server:
        sender = transport(server.url, False)
        assert all(sender.post_json("", BODY).ok for _ in range(2))
    assert requests_sends == [server.url + "/"] * 2


def test_an_error_mid_request_leaves_no_half_sent_connection_behind():
    with RawServer(answering(reply())) as server:
        for lean in (True, False):
            sender = transport(server.url, lean)
            assert sender.post_json("", BODY).ok
            with pytest.raises(UnicodeEncodeError):  # http.client refuses a header it cannot send in Latin-1
                sender.post_json("", BODY, headers={"X-Price": "5 €"})
            after = sender.post_json("", BODY)
            assert (after.ok, after.attempts, after.faults) == (True, 1, ())
        assert len(server.seen) == 4
