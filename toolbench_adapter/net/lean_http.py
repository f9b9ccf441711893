"""The transport's JSON POSTs to plain ``http://`` URLs over ``http.client``, kept alive: the request requests
would send, for about a third of its CPU. requests spends ~290 µs of CPU per small POST here, http.client on a
kept-alive connection ~85 (benchmarks/bench_http.py); net/http_session.py already caches requests' per-URL work,
and what is left (adapter, urllib3's pool and retry objects, hooks, cookie jars) cannot get near that.

On the wire: the session's headers (requests' defaults and the transport's own) merged with the request's by
requests' ``merge_setting``, Content-Type and Content-Length as ``prepare_body`` sets them, and the body as
requests' ``json=`` makes it (``json.dumps(body, allow_nan=False)`` in UTF-8). The reply is read as requests
reads it: headers joined as urllib3 joins them, gzip / deflate decoded, ``text`` and ``json()`` by requests'
rules for the charset.

``LeanClient.post`` returns None (requests sends it) where requests would add something:
- per URL, decided once per thread (the environment read once per URL, as net/http_session.py promises): not
  ``http://``, a proxy (environment or session), netrc or URL credentials, a custom adapter;
- per call (a caller may change the session): cookies in the jar, auth, params, proxies, hooks;
- after a reply: a redirect (requests sends that URL from then on, this request again included: a redirect
  means the server did not act on it); a Set-Cookie goes into the session's jar as requests would put it, and
  a session with cookies sends everything through requests.

Faults are raised as the exceptions requests raises for them, so ``transport.classify_exception`` names them
alike: refused / reset / closed before a reply -> ConnectionError; a connect or read timeout (mid-body too) ->
ConnectTimeout / ReadTimeout; a body cut short, a broken chunk, a body that does not decode -> TRUNCATED_BODY's
ChunkedEncodingError / ContentDecodingError. A kept-alive connection the server closed while idle is noticed
before reuse (readable at once means EOF) and replaced; a request already sent is never sent again (as with
requests' ``Retry(0, read=False)``). After a fault, or a reply that closes, the connection is dropped.

The timeout bounds the whole exchange (net/deadline.py): each socket operation waits at most the time left, and
the watchdog ends a reply that keeps coming a byte at a time; either is a ReadTimeout."""

from __future__ import annotations

import http.client
import io
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import requests
import urllib3
from requests.compat import chardet
from requests.compat import json as complexjson  # the json module requests itself uses
from requests.cookies import extract_cookies_to_jar
from requests.models import REDIRECT_STATI, PreparedRequest
from requests.sessions import merge_setting
from requests.structures import CaseInsensitiveDict
from requests.utils import get_encoding_from_headers, guess_json_utf, select_proxy
from urllib3.util import wait_for_read

from toolbench_adapter.net.deadline import Deadline, limit_of
from toolbench_adapter.net.http_session import DeadlineAdapter, EnvCachedSession, remember

_UNSEEN = object()
_MAX_CONNECTIONS = 16  # hosts per thread; a run talks to a handful


class LeanResponse:
    """What the transport and its callers read from a ``requests.Response``, computed as requests does."""

    __slots__ = ("status_code", "reason", "headers", "content", "url", "encoding", "_text")

    def __init__(self, status_code: int, reason: str, headers: CaseInsensitiveDict, content: bytes, url: str):
        self.status_code, self.reason, self.headers, self.content, self.url = status_code, reason, headers, content, url
        self.encoding = get_encoding_from_headers(headers)  # the charset, else ISO-8859-1 for text/*, utf-8 for JSON
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            encoding = self.encoding
            if encoding is None and self.content:  # requests' fallback: a guess from the bytes
                encoding = chardet.detect(self.content)["encoding"] if chardet is not None else "utf-8"
            try:
                self._text = str(self.content, encoding or "utf-8", errors="replace")
            except (LookupError, TypeError):  # an unknown charset
                self._text = str(self.content, errors="replace")
        return self._text

    def json(self) -> Any:
        """``Response.json()``: without a declared charset, the UTF-8/16/32 the bytes show; else the text."""
        try:
            if not self.encoding and len(self.content) > 3 and (guessed := guess_json_utf(self.content)):
                try:
                    return complexjson.loads(self.content.decode(guessed))
                except UnicodeDecodeError:
                    pass
            return complexjson.loads(self.text)
        except complexjson.JSONDecodeError as exc:
            raise requests.exceptions.JSONDecodeError(exc.msg, exc.doc, exc.pos) from None


class _Route(NamedTuple):
    """Where one URL goes: the prepared URL (requests' form of it), its host, port and request target."""

    url: str
    host: str
    port: int
    target: str


class LeanClient:
    """One thread's lean lane: its kept-alive connections by (host, port), beside that thread's session."""

    def __init__(self, session: EnvCachedSession):
        self.session = session
        self._routes: dict[tuple[str, bool], _Route | None] = {}
        self._headers: dict[tuple, dict[str, str]] = {}
        self._connections: dict[tuple[str, int], http.client.HTTPConnection] = {}

    def post(self, url: str, body: Any, headers: Mapping[str, str] | None,
             timeout: float | tuple[float, float] | None) -> LeanResponse | None:
        """POST ``body`` as JSON; None when requests must send it (nothing was sent then)."""
        session = self.session
        if session.cookies or session.auth or session.params or session.proxies or session.hooks.get("response"):
            return None
        key = (url, session.trust_env)
        route = self._routes.get(key, _UNSEEN)
        if route is _UNSEEN:
            route = self._route(url)
            remember(self._routes, key, route)
        if route is None:
            return None
        if isinstance(timeout, tuple):
            connect_s, read_s = timeout
        elif timeout is None or isinstance(timeout, (int, float)):
            connect_s = read_s = timeout
        else:  # e.g. a urllib3 Timeout: requests knows what to do with it
            return None
        try:
            data = None if body is None else complexjson.dumps(body, allow_nan=False).encode("utf-8")
        except ValueError as exc:  # NaN or infinity: requests refuses it the same way
            raise requests.exceptions.InvalidJSONError(exc) from None
        sent = self._headers_for(headers, data)
        with Deadline(limit_of(timeout)) as deadline:  # the whole exchange, not each read (net/deadline.py)
            try:
                response, reply = self._exchange(route, data, sent, connect_s, read_s, deadline)
            except requests.RequestException as exc:
                if deadline.passed():  # a read's own timeout cut to the time left, or the watchdog: the whole request
                    raise requests.ReadTimeout(deadline.describe()) from exc
                raise
        if "set-cookie" in response.headers:  # into the jar as requests puts them (later calls go by requests)
            request = PreparedRequest()
            request.url, request.headers = route.url, CaseInsensitiveDict(sent)
            extract_cookies_to_jar(session.cookies, request, SimpleNamespace(_original_response=reply))
        if response.status_code in REDIRECT_STATI and "location" in response.headers:
            self._routes[key] = None  # requests follows redirects: it sends this URL from now on
            return None
        return response

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

    def _route(self, url: str) -> _Route | None:
        """The URL's route, or None where requests would add something (the environment read once per URL)."""
        if url[:7].lower() != "http://":
            return None
        session = self.session
        try:
            prepared = PreparedRequest()
            prepared.prepare_url(url, None)  # requests' own normalisation: "/" for no path, quoting
            parts = urlsplit(prepared.url)
            port = parts.port or 80
        except (requests.RequestException, ValueError):
            return None  # requests raises its own error for it
        if parts.username is not None or parts.password is not None or not parts.hostname:
            return None  # credentials in the URL: requests sends them as Basic auth
        proxies = session.merge_environment_settings(prepared.url, {}, None, None, None)["proxies"]
        if select_proxy(prepared.url, proxies) is not None:
            return None
        if session.trust_env and session.netrc_auth(url) is not None:
            return None
        if type(session.get_adapter(prepared.url)) is not DeadlineAdapter:
            return None  # someone mounted their own (retries, a test double): it must see the request
        return _Route(prepared.url, parts.hostname, port, prepared.path_url)

    def _headers_for(self, headers: Mapping[str, str] | None, data: bytes | None) -> dict[str, str]:
        """The request's headers as requests would send them, merged and checked once per header set."""
        session_headers = self.session.headers
        key = (tuple(headers.items()) if headers else (), tuple(session_headers.lower_items()), data is None)
        merged = self._headers.get(key)
        if merged is None:
            prepared = PreparedRequest()  # requests' merge (None drops a header) and its validity checks
            prepared.prepare_headers(merge_setting(headers, session_headers, dict_class=CaseInsensitiveDict))
            names = prepared.headers
            if data is None:
                names.setdefault("Content-Length", "0")  # a POST without a body says so (prepare_content_length)
            else:
                names.pop("Content-Length", None)  # set per body below
                names.setdefault("Content-Type", "application/json")
            names.setdefault("User-Agent", f"python-urllib3/{urllib3.__version__}")  # urllib3 adds its own
            merged = dict(names.items())
            remember(self._headers, key, merged)
        return merged if data is None else {**merged, "Content-Length": str(len(data))}

    def _connection(self, route: _Route) -> http.client.HTTPConnection:
        address = (route.host, route.port)
        connection = self._connections.get(address)
        if connection is None:
            if len(self._connections) >= _MAX_CONNECTIONS:
                self._connections.pop(next(iter(self._connections))).close()
            connection = self._connections[address] = http.client.HTTPConnection(route.host, route.port)
        return connection

    def _exchange(self, route: _Route, data: bytes | None, headers: dict[str, str], connect_s: float | None,
                  read_s: float | None, deadline: Deadline) -> tuple[LeanResponse, http.client.HTTPResponse]:
        connection = self._connection(route)
        if connection.sock is not None and wait_for_read(connection.sock, timeout=0):
            connection.close()  # readable while idle: the server closed it (or sent what nobody asked for)
        try:
            return self._talk(connection, route, data, headers, connect_s, read_s, deadline)
        except BaseException:
            connection.close()  # after a fault (or anything else mid-exchange) its state is unknown
            raise

    @staticmethod
    def _talk(connection: http.client.HTTPConnection, route: _Route, data: bytes | None, headers: dict[str, str],
              connect_s: float | None, read_s: float | None,
              deadline: Deadline) -> tuple[LeanResponse, http.client.HTTPResponse]:
        connect_s, read_s = deadline.socket_timeout(connect_s), deadline.socket_timeout(read_s)
        if connection.sock is None:
            connection.timeout = connect_s
            try:
                connection.connect()
            except TimeoutError as exc:
                raise requests.ConnectTimeout(
                    f"Connection to {route.host} timed out. (connect timeout={connect_s})") from exc
            except OSError as exc:
                raise requests.ConnectionError(f"Failed to establish a new connection: {exc}") from exc
        deadline.watch(connection.sock)  # a byte at a time passes every read's timeout: the watchdog ends it
        try:
            connection.sock.settimeout(connect_s)  # sending is under the connect timeout, as urllib3 does it
            try:
                connection.request("POST", route.target, data, headers)
            except (BrokenPipeError, ConnectionResetError):
                pass  # as urllib3: the server may have answered (and hung up) before reading it all
            connection.sock.settimeout(read_s)
            reply = connection.getresponse()
        except TimeoutError as exc:
            raise requests.ReadTimeout(f"Read timed out. (read timeout={read_s})") from exc
        except (OSError, http.client.HTTPException) as exc:
            raise requests.ConnectionError(f"Connection aborted: {exc!r}") from exc
        try:
            content = reply.read()  # all of it, so the connection can serve the next request
        except TimeoutError as exc:
            raise requests.ReadTimeout(f"Read timed out while reading the body. (read timeout={read_s})") from exc
        except (OSError, http.client.HTTPException, ValueError) as exc:  # IncompleteRead, a broken chunk, a reset
            raise requests.exceptions.ChunkedEncodingError(f"Connection broken: {exc!r}") from exc
        joined: dict[str, tuple[str, str]] = {}  # repeated headers joined under the first one's name, as urllib3
        for name, value in reply.msg.items():
            first = joined.get(key := name.lower())
            joined[key] = (name, value) if first is None else (first[0], f"{first[1]}, {value}")
        received = CaseInsensitiveDict(joined.values())
        coding = received.get("content-encoding")
        if coding and coding.strip().lower() != "identity":
            try:  # urllib3's own decoders: gzip, deflate, and br / zstd where requests offers them
                content = urllib3.HTTPResponse(io.BytesIO(content), headers={"content-encoding": coding},
                                               preload_content=False, decode_content=True).read()
            except urllib3.exceptions.DecodeError as exc:
                raise requests.exceptions.ContentDecodingError(f"Could not decode a {coding} body: {exc}") from exc
        return LeanResponse(reply.status, reply.reason, received, content, route.url), reply

