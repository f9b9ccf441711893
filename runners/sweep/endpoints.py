"""The endpoints a sweep's cells and judges ask, each with one cap on requests in flight for the whole sweep.

The caps live in toolbench_adapter/net/inflight.py (every HTTP transport of the process holds the cap of the URL it
sends to), so the cells that share an endpoint share its cap and a cell that ends frees its share. The spec's
``endpoints:`` sets a URL's cap (``max_in_flight``) and pace (``rate_per_s``); an unlisted one gets
DEFAULT_MAX_IN_FLIGHT.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from toolbench_adapter.net import inflight
from toolbench_adapter.net.transport import url_list

from ..config import RunConfig
from ..models.openai_http import DEFAULT_BASE_URL, OPENAI_BACKENDS
from .spec import DEFAULT_MAX_IN_FLIGHT, Spec


def model_urls(cfg: RunConfig) -> list[str]:
    """The model endpoints a run asks over HTTP ([] for an in-process backend: hf, scripted, replay)."""
    if cfg.backend not in OPENAI_BACKENDS:
        return []
    return [url.rstrip("/") for url in url_list(cfg.base_url or DEFAULT_BASE_URL)]


def max_in_flight(spec: Spec, url: str) -> int:
    return int(spec.endpoints.get(url.rstrip("/"), {}).get("max_in_flight", DEFAULT_MAX_IN_FLIGHT))


def rate_per_s(spec: Spec, url: str) -> float | None:
    return spec.endpoints.get(url.rstrip("/"), {}).get("rate_per_s")


@contextlib.contextmanager
def capped(spec: Spec, urls: Iterable[str]) -> Iterator[dict[str, object]]:
    """Every URL capped while the sweep runs (the caps are process-wide: cleared at the end)."""
    caps = {url: inflight.set_cap(url, max_in_flight(spec, url), rate_per_s=rate_per_s(spec, url))
            for url in dict.fromkeys(u.rstrip("/") for u in urls)}
    try:
        yield caps
    finally:
        for url in caps:
            inflight.clear_cap(url)


def utilisation_lines(caps: dict[str, inflight.Cap], judge_urls: Iterable[str]) -> list[str]:
    """The summary's line per endpoint. A model endpoint: its utilisation over the sweep (the cells keep it busy
    from start to end). A judge endpoint idles while the cells run, so over the sweep it reads near 0% however
    many judgements it served: its requests, how many it had at once and its busy slot-seconds instead."""
    judges = {u.rstrip("/") for u in judge_urls}
    lines = []
    for url, cap in caps.items():
        if url not in judges:
            lines.append(f"  model endpoint {url}: {cap.requests} requests; utilisation {cap.utilisation():.0%} of "
                         f"its {cap.max_in_flight} slots over the sweep")
        elif not cap.requests:
            lines.append(f"  judge endpoint {url}: no request reached it (every verdict came from the judge cache)")
        else:
            lines.append(f"  judge endpoint {url}: {cap.requests} requests (judgements and its checks), at most "
                         f"{cap.peak} of its {cap.max_in_flight} slots at once, {cap.mark().busy_s:.1f} s busy in "
                         "all")
    return lines
