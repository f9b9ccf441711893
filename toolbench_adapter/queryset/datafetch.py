"""Fetch the upstream StableToolBench query files (for users with a network; never used by tests
except against a loopback server).

Every file is downloaded and checked (JSON, and the SHA-256 of the pinned commit's file) before any is
written, so a refresh that fails half-way, or a server that serves other files, leaves the folder as it was.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import requests
from tqdm import tqdm

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import write_bytes_atomic
from toolbench_adapter.files.input_files import read_bytes
from toolbench_adapter.protocol.query_files import QUERY_FILE_SHA256, UPSTREAM_COMMIT
from toolbench_adapter.queryset.queries import GROUPS, IDS_DIR, QUERY_DIR

UPSTREAM_BASE_URL = f"https://raw.githubusercontent.com/THUNLP-MT/StableToolBench/{UPSTREAM_COMMIT}"
ANY_COMMIT_FLAG = "--any-commit"


@dataclass
class FetchResult:
    written: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)  # already there, not replaced (no overwrite)
    pinned: int = 0  # files written or kept whose digest is the pinned commit's


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch_queries(out: str | Path, base_url: str = UPSTREAM_BASE_URL, groups=GROUPS, timeout: float = 60.0,
                  overwrite: bool = False, any_commit: bool = False,
                  session: requests.Session | None = None) -> FetchResult:
    """Download test_instruction and test_query_ids files for ``groups`` into ``out`` (same layout). Files
    already there are kept unless ``overwrite``. Each download must be JSON and, unless ``any_commit``, the
    pinned commit's file byte for byte; only when every one is, are they written (each atomically).
    ``session``: what downloads (`tba data fetch` passes net/http_session.py's, whose ``timeout`` bounds each
    whole download; a plain requests session bounds each read only)."""
    out = Path(out)
    result = FetchResult()
    fetched: list[tuple[Path, bytes]] = []
    with session or requests.Session() as session:
        for folder, group in tqdm([(f, g) for g in groups for f in (QUERY_DIR, IDS_DIR)],
                                  desc="fetching query files", unit="file"):
            rel = (folder / f"{group}.json").as_posix()
            target = out / rel
            if target.exists() and not overwrite:
                result.kept.append(target)
                kind = "query file" if folder == QUERY_DIR else "test id file"
                result.pinned += sha256_of(read_bytes(target, kind)) == QUERY_FILE_SHA256.get(rel)
                continue
            fetched.append((target, _download(session, f"{base_url.rstrip('/')}/{rel}", rel, timeout, any_commit)))
    for target, data in fetched:  # every file checked: now replace
        write_bytes_atomic(target, data)
        result.written.append(target)
        result.pinned += sha256_of(data) == QUERY_FILE_SHA256.get(target.relative_to(out).as_posix())
    return result


def _download(session: requests.Session, url: str, rel: str, timeout: float, any_commit: bool) -> bytes:
    try:
        response = session.get(url, timeout=timeout)
    except requests.RequestException as exc:
        raise InputError(f"could not fetch {url}: {exc}", fix="check the network, or pass --base-url") from None
    if response.status_code != 200:
        raise InputError(f"{url} answered HTTP {response.status_code}", fix="check --base-url")
    try:
        json.loads(response.content)
    except ValueError:
        raise InputError(f"{url} did not return JSON; nothing was written", fix="check --base-url") from None
    expected = QUERY_FILE_SHA256.get(rel)
    if not any_commit and sha256_of(response.content) != expected:
        what = (f"SHA-256 {sha256_of(response.content)[:16]}…, not StableToolBench @ {UPSTREAM_COMMIT[:7]}'s "
                f"{expected[:16]}…" if expected else f"no StableToolBench @ {UPSTREAM_COMMIT[:7]} file is named {rel}")
        raise InputError(f"{url}: {what}; nothing was written", field="--base-url",
                         fix=f"point --base-url at the raw files of StableToolBench @ {UPSTREAM_COMMIT[:7]} (the "
                         f"default), or pass {ANY_COMMIT_FLAG} to take another commit's files (checked as JSON only; "
                         "tba doctor then reports them as another query set)")
    return response.content
