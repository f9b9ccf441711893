"""A requests.Session that does once per URL what requests does on every request: read the environment's proxy
and CA settings, read the netrc file, and merge the session's headers into the request's.

With ``trust_env`` on, requests scans the whole process environment twice per request (proxies, no_proxy) and
looks for ~/.netrc (and reads it, where there is one) on every request; and it rebuilds the URL, the merged
headers and the cookie jar of each request from scratch, through isinstance checks against typing Protocols
that cost more than the rest. Together about half of requests' own CPU per tool call here (measured with
benchmarks/profile_runner.py). The results are the ones requests computes, computed by requests' own
functions: the first request to a URL computes them, later ones reuse them.

- proxies, verify, cert: ``merge_environment_settings``, cached per URL and per the session's own settings.
- netrc auth: ``requests.utils.get_netrc_auth``, cached per URL and ``NETRC`` value (only while ``trust_env``
  is on and neither the request nor the session has auth of its own, as requests does).
- method, URL, headers: a prepared template per (method, URL, request headers, session headers); each request
  gets a copy with its own body, auth and hooks, prepared by requests' ``PreparedRequest`` methods in the
  order ``PreparedRequest.prepare`` applies them. A request with cookies or query parameters (its own or the
  session's) is prepared by requests itself, as before.

A session reads the environment and the netrc file when it first reaches a URL (sessions live one per thread
for one run), so a change to HTTP_PROXY & co. or to ~/.netrc in the middle of a run is seen by sessions made
after it only."""

from __future__ import annotations

import os
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from requests.cookies import RequestsCookieJar
from requests.hooks import default_hooks
from requests.models import PreparedRequest
from requests.sessions import merge_hooks, merge_setting
from requests.structures import CaseInsensitiveDict
from requests.utils import get_netrc_auth
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from toolbench_adapter.net.deadline import Deadline, limit_of, watch_current

_MAX_CACHED = 256  # URLs (and header sets) per session; more than a run uses, fewer than leaks memory


class _Watched:
    """A urllib3 connection whose socket is watched by the request's Deadline (net/deadline.py): registered when
    it is made (before a TLS handshake, which may stall too) and again each time a kept-alive one is reused."""

    def _new_conn(self):
        sock = super()._new_conn()
        watch_current(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:
            watch_current(self.sock)
        return super().request(*args, **kwargs)


class _WatchedHTTPConnection(_Watched, HTTPConnection):
    pass


class _WatchedHTTPSConnection(_Watched, HTTPSConnection):
    pass


class _WatchedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _WatchedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """requests' adapter, its connections watched by the request's Deadline (directly or through an HTTP proxy;
    a SOCKS proxy's connections are its own classes, bounded per read only)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager


class EnvCachedSession(requests.Session):
    """Also: a request's ``timeout`` bounds the whole request (net/deadline.py), not each read alone; a timeout
    is requests' ReadTimeout. With ``stream=True`` the body, read after ``send`` returns, is not bounded."""

    def __init__(self) -> None:
        super().__init__()
        self.mount("https://", DeadlineAdapter())
        self.mount("http://", DeadlineAdapter())
        self._environment_settings: dict[tuple, dict[str, Any]] = {}
        self._netrc_auth: dict[tuple[str, str | None], tuple[str, str] | None] = {}
        self._templates: dict[tuple, PreparedRequest] = {}

    def send(self, request: PreparedRequest, **kwargs: Any) -> requests.Response:
        with Deadline(limit_of(kwargs.get("timeout"))) as deadline:
            try:
                return super().send(request, **kwargs)
            except requests.RequestException as exc:
                if deadline.passed():  # a read's own timeout cut to the time left, or the watchdog: the whole request
                    raise requests.ReadTimeout(deadline.describe(), request=request) from exc
                raise

    def merge_environment_settings(self, url: str, proxies: Any, stream: Any, verify: Any, cert: Any) -> dict:
        if proxies:  # the caller's own proxies (requests adds the environment's to that dict): as requests does
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        try:  # everything the result depends on, the session's own settings included
            key = (url, stream, verify, cert, self.trust_env, tuple(sorted(self.proxies.items())), self.stream,
                   self.verify, self.cert)
            settings = self._environment_settings.get(key)
        except TypeError:  # unhashable options (e.g. a list cert): compute as requests does
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        if settings is None:
            settings = super().merge_environment_settings(url, {}, stream, verify, cert)
            remember(self._environment_settings, key, settings)
        return {**settings, "proxies": dict(settings["proxies"])}  # a copy: nothing downstream edits the cache

    def netrc_auth(self, url: str) -> tuple[str, str] | None:
        """``get_netrc_auth(url)``, read once per URL (and NETRC value): requests reads the file per request."""
        key = (url, os.environ.get("NETRC"))
        if key not in self._netrc_auth:
            remember(self._netrc_auth, key, get_netrc_auth(url))
        return self._netrc_auth[key]

    def prepare_request(self, request: requests.Request) -> PreparedRequest:
        """What ``requests.Session.prepare_request`` returns, with the parts that repeat computed once."""
        url, headers = request.url, request.headers
        if (request.cookies or self.cookies or request.params or self.params or not isinstance(url, str)
                or not isinstance(request.method, str) or not isinstance(headers, (dict, type(None)))):
            return super().prepare_request(request)  # cookies or parameters to merge: requests' own way
        auth = request.auth
        if self.trust_env and not auth and not self.auth:  # as requests does, the file read once per URL
            auth = self.netrc_auth(url)
        method = request.method.upper()
        try:
            key = (method, url, tuple(headers.items()) if headers else (), tuple(self.headers.items()))
            template = self._templates.get(key)
        except TypeError:  # an unhashable header value (requests refuses it while preparing)
            return super().prepare_request(request)
        if template is None:  # PreparedRequest.prepare's first steps, for this method, URL and headers
            template = PreparedRequest()
            template.prepare_method(method)
            template.prepare_url(url, merge_setting(request.params, self.params))
            template.prepare_headers(merge_setting(headers, self.headers, dict_class=CaseInsensitiveDict))
            template.prepare_cookies(RequestsCookieJar())
            remember(self._templates, key, template)
        prepared = template.copy()  # its own headers and cookie jar
        prepared.hooks = default_hooks()  # copy() shares the template's hooks dict: never add to that one
        # PreparedRequest.prepare's last steps, in its order
        prepared.prepare_body(request.data, request.files, request.json)
        prepared.prepare_auth(merge_setting(auth, self.auth), url)
        prepared.prepare_hooks(merge_hooks(request.hooks, self.hooks))
        return prepared


def remember(cache: dict, key: Any, value: Any) -> None:
    """``cache[key] = value``, the cache emptied first when full (bounded: sessions live for a whole run)."""
    if len(cache) >= _MAX_CACHED:
        cache.clear()
    cache[key] = value
