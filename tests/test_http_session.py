"""EnvCachedSession: the settings requests computes from the environment, computed once per URL."""

from __future__ import annotations

import pytest
import requests
import requests.sessions

from toolbench_adapter.http_session import EnvCachedSession
from toolbench_adapter.transport import HttpTransport

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
