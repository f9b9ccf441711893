"""Fetch the upstream StableToolBench query files (for users with a network; never used by tests
except against a loopback server)."""

from __future__ import annotations

import json
from pathlib import Path

import requests
from tqdm import tqdm

from .errors import InputError
from .fileio import write_bytes_atomic
from .queries import GROUPS, IDS_DIR, QUERY_DIR

# the commit whose files ../shared/stabletoolbench mirrors; pinning it keeps fetched data reproducible
UPSTREAM_COMMIT = "aa4ed9f4737ad98bd706663f01d63623c3427812"
UPSTREAM_BASE_URL = f"https://raw.githubusercontent.com/THUNLP-MT/StableToolBench/{UPSTREAM_COMMIT}"


def fetch_queries(out: str | Path, base_url: str = UPSTREAM_BASE_URL, groups=GROUPS, timeout: float = 60.0,
                  overwrite: bool = False) -> list[Path]:
    """Download test_instruction and test_query_ids files for ``groups`` into ``out`` (same layout).
    Each file is validated as JSON and written atomically; existing files are kept unless overwrite."""
    out = Path(out)
    wanted = [(folder, group) for group in groups for folder in (QUERY_DIR, IDS_DIR)]
    written = []
    with requests.Session() as session:
        for folder, group in tqdm(wanted, desc="fetching query files", unit="file"):
            target = out / folder / f"{group}.json"
            if target.exists() and not overwrite:
                continue
            url = f"{base_url.rstrip('/')}/{folder.as_posix()}/{group}.json"
            try:
                response = session.get(url, timeout=timeout)
            except requests.RequestException as exc:
                raise InputError(f"could not fetch {url}: {exc}", fix="check the network, or pass --base-url") from None
            if response.status_code != 200:
                raise InputError(f"{url} answered HTTP {response.status_code}", fix="check --base-url")
            try:
                json.loads(response.text)
            except json.JSONDecodeError:
                raise InputError(f"{url} did not return JSON", fix="check --base-url") from None
            write_bytes_atomic(target, response.content)
            written.append(target)
    return written
