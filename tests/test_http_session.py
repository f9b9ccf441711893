"""EnvCachedSession: the settings requests computes from the environment, computed once per URL."""

from __future__ import annotations

import pytest
import requests
import requests.sessions

from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.net.transport import HttpTransport

URLS = ["http://127.0.0.1:8080/virtual", "http://tools.example:9000/virtual", "https://api.example/v1/chat"]


@pytest.fixture
def proxy_env(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://secure-proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/ssl/certs/bundle.pem")


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("verify", [None, True, False, "/my/ca.pem"])
def test_the_same_settings_as_requests(proxy_env, url, verify):
    cached = EnvCachedSession()
    for _ in range(2):  # computed, then from the cache
        assert (cached.merge_environment_settings(url, {}, None, verify, None)
                == requests.Session().merge_environment_settings(url, {}, None, verify, None))


def test_the_environment_is_read_once_per_url(proxy_env, monkeypatch):
    calls = []
    real = requests.sessions.get_environ_proxies
    monkeypatch.setattr(requests.sessions, "get_environ_proxies", lambda url, no_proxy=None: calls.append(url)
                        or real(url, no_proxy=no_proxy))
    session = EnvCachedSession()
    for _ in range(3):
        for url in URLS[:2]:
            session.merge_environment_settings(url, {}, None, None, None)
    assert calls == URLS[:2]


def test_a_returned_setting_edited_downstream_leaves_the_cache_alone(proxy_env):
    session = EnvCachedSession()
    first = session.merge_environment_settings(URLS[1], {}, None, None, None)
    first["proxies"]["http"] = "http://elsewhere:1"
    assert session.merge_environment_settings(URLS[1], {}, None, None, None)["proxies"]["http"] == (
        "http://proxy.example:3128")


def test_caller_proxies_are_merged_as_requests_does(proxy_env):
    mine, theirs = {"https": "http://mine:1"}, {"https": "http://mine:1"}
    assert (EnvCachedSession().merge_environment_settings(URLS[1], mine, None, None, None)
            == requests.Session().merge_environment_settings(URLS[1], theirs, None, None, None))
    assert mine == theirs  # requests adds the environment's proxies to the caller's dict


def test_the_transport_sends_through_it():
    assert isinstance(HttpTransport.to(URLS[0]).session(), EnvCachedSession)


def _prepared_pair(session_setup, **request):
    """The PreparedRequest of EnvCachedSession (twice: the template computed, then reused) and of requests."""
    ours, theirs = EnvCachedSession(), requests.Session()
    for session in (ours, theirs):
        session_setup(session)
    first, second = (ours.prepare_request(requests.Request(**request)) for _ in range(2))
    return first, second, theirs.prepare_request(requests.Request(**request))


def _wire(prepared):
    return prepared.method, prepared.url, list(prepared.headers.items()), prepared.body


@pytest.mark.parametrize("request_fields", [
    dict(method="post", url=URLS[0], json={"tool_input": "{\"a\": 1}", "strip": ""}, headers={"toolbench_key": "k"}),
    dict(method="POST", url="http://tools.example:9000", json=[1, "é"]),
    dict(method="POST", url=URLS[2], data={"a": "b c"}, headers={"Content-Type": "text/plain", "Accept": None}),
    dict(method="GET", url=URLS[1] + "?x=1"),
    dict(method="POST", url=URLS[1], data=b"raw", auth=("user", "pw")),
    dict(method="POST", url="http://user:secret@tools.example/virtual", json={}),
    dict(method="POST", url=URLS[0], json={"a": 1}, params={"q": "1"}),  # requests' own path
    dict(method="POST", url=URLS[0], json={"a": 1}, cookies={"sticky": "1"}),  # requests' own path
])
@pytest.mark.parametrize("session_setup", [
    lambda s: None,
    lambda s: s.headers.update({"Authorization": "Bearer t", "User-Agent": "tba"}),
    lambda s: setattr(s, "auth", ("session", "pw")),
    lambda s: s.cookies.set("session", "1"),
])
def test_prepared_requests_are_requests_own(request_fields, session_setup):
    first, second, theirs = _prepared_pair(session_setup, **request_fields)
    assert _wire(first) == _wire(second) == _wire(theirs)


def test_netrc_auth_is_honoured_and_read_once_per_url(tmp_path, monkeypatch):
    import toolbench_adapter.net.http_session as http_session

    netrc = tmp_path / "netrc"
    netrc.write_text("machine tools.example login alice password s3cret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    reads = []
    real = http_session.get_netrc_auth
    monkeypatch.setattr(http_session, "get_netrc_auth", lambda url: reads.append(url) or real(url))
    session = EnvCachedSession()
    for _ in range(3):
        for url in URLS[:2]:
            prepared = session.prepare_request(requests.Request("POST", url, json={}))
            assert prepared.headers.get("Authorization") == (requests.Session().prepare_request(
                requests.Request("POST", url, json={})).headers.get("Authorization"))
    assert reads == URLS[:2]
    assert prepared.headers["Authorization"].startswith("Basic ")  # tools.example's entry
    session.trust_env = False  # as requests: no netrc without trust_env
    assert "Authorization" not in session.prepare_request(requests.Request("POST", URLS[1], json={})).headers


def test_hooks_and_headers_stay_per_request():
    session = EnvCachedSession()
    hook = lambda response, **kwargs: response  # noqa: E731
    for _ in range(3):
        prepared = session.prepare_request(requests.Request("POST", URLS[0], json={}, hooks={"response": [hook]}))
        assert prepared.hooks["response"] == [hook]
        prepared.headers["X-Edited"] = "1"  # an auth handler or a caller editing one request's headers
    assert "X-Edited" not in session.prepare_request(requests.Request("POST", URLS[0], json={})).headers
