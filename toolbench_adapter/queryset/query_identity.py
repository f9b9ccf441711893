"""A query's identity: a digest of what the model is given (the query text and the function list as sent), and
a group's: a digest of every evaluated query of that group in a data root. A run folder records both
(manifest.json ``queries``), so a rerun on other queries is refused (runners/execution/identity.py) while a copy
of the same data at another path is not: identity is content, never a path."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from toolbench_adapter.compat import STB, Compat
from toolbench_adapter.queryset.queries import Query, QuerySet
from toolbench_adapter.queryset.toolset import function_list

DIGEST_OF = "sha256 of the canonical JSON (sorted keys, no spaces, UTF-8) of {query, functions}"


def canonical_sha256(data: object) -> str:
    """sha256 of ``data`` as canonical JSON (keys sorted, no spaces, UTF-8): run identity and comparability's
    recognition of StableToolBench's queries both digest this way."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def query_digest(query: Query, flavour: str = "legacy", compat: Compat = STB) -> str:
    """The digest of what the model is given for ``query``: its text and its function list as sent."""
    return canonical_sha256({"query": query.query, "functions": function_list(query, flavour, compat)})


def set_digest(digests: dict[str, str]) -> str:
    """A group's digest from its queries' (id -> digest): the same queries give the same digest in any order."""
    return canonical_sha256(sorted(digests.items()))


def group_identity(queries: Iterable[Query], flavour: str, compat: Compat) -> dict[str, str]:
    """query id (a string, as JSON keys are) -> digest."""
    return {str(q.query_id): query_digest(q, flavour, compat) for q in queries}


def root_identity(query_set: QuerySet, groups: Iterable[str], flavour: str, compat: Compat) -> dict[str, dict]:
    """group -> {"set": the digest of all its evaluated queries, "ids": id -> digest} for each of ``groups``
    this root holds (a group it lacks is left out)."""
    present = set(query_set.available_groups())
    identity = {}
    for group in groups:
        if group in present:
            ids = group_identity(query_set.load(group), flavour, compat)
            identity[group] = {"set": set_digest(ids), "ids": ids}
    return identity
