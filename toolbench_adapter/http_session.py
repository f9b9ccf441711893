"""A requests.Session that reads the environment's proxy and CA settings once per URL, not per request.

With ``trust_env`` on, requests scans the whole process environment twice per request (proxies, no_proxy):
about 0.2 ms of CPU per tool call here, some 15% of the client's cost. The settings are the ones requests
computes: the first request to a URL computes them, later ones reuse them. A session reads the environment
when it first reaches a URL (sessions live one per thread for one run), so a change to HTTP_PROXY & co. in
the middle of a run is seen by sessions made after it only."""

from __future__ import annotations

from typing import Any

import requests


class EnvCachedSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self._environment_settings: dict[tuple, dict[str, Any]] = {}

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
            self._environment_settings[key] = settings
        return {**settings, "proxies": dict(settings["proxies"])}  # a copy: nothing downstream edits the cache
