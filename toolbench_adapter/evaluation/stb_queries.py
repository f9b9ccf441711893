"""Which queries are StableToolBench's: the 765 solvable queries recognised by a digest of each query record
(the table shipped in toolbench_adapter/data/stb_queries/digests.json, made from data/stabletoolbench), and a
run's queries sorted into StableToolBench's and others (its setup facts: comparability.py reads them)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from toolbench_adapter.queryset.query_identity import canonical_sha256

DIGESTS = Path(__file__).resolve().parent.parent / "data" / "stb_queries" / "digests.json"
STB_QUERIES = 765


def query_digest(record: dict) -> str:
    """sha256 of a query record as canonical JSON (keys sorted, no spaces, UTF-8): the query, its id, its API list
    and every other field, so a changed query under a known id is another query."""
    return canonical_sha256(record)


def digest_table(query_dir: str | Path) -> dict[str, dict[str, str]]:
    """group -> query id -> digest, over every record of each ``{group}.json`` of a test_instruction folder (how
    the shipped table was made: ``python -m toolbench_adapter.evaluation.stb_queries DIR``)."""
    table = {}
    for path in sorted(Path(query_dir).glob("*.json")):
        records = json.loads(path.read_text(encoding="utf-8"))
        table[path.stem] = {str(r["query_id"]): query_digest(r) for r in records}
    return table


@lru_cache(maxsize=1)
def stb_digests() -> dict[str, dict[str, str]]:
    return json.loads(DIGESTS.read_text(encoding="utf-8"))["groups"]


def classify_queries(queries, root: str | Path) -> dict:
    """The facts of a selection (Query objects): which of them are StableToolBench's (same group, id and
    digest) and which are not, as {group: [ids]} each."""
    known = stb_digests()
    stb: dict[str, list[int]] = {}
    other: dict[str, list[int]] = {}
    for query in queries:
        same = known.get(query.group, {}).get(str(query.query_id)) == query_digest(query.raw)
        (stb if same else other).setdefault(query.group, []).append(query.query_id)
    return {"root": str(root), "stb": stb, "other": other}


def merge_queries(old: dict | None, new: dict) -> dict:
    """A run folder's queries over its sessions: the ids of each side, united."""
    if not isinstance(old, dict):
        return new
    merged = {"root": new.get("root")}
    for side in ("stb", "other"):
        groups = {**(old.get(side) or {})}
        for group, ids in (new.get(side) or {}).items():
            groups[group] = sorted(set(groups.get(group, [])) | set(ids))
        merged[side] = groups
    return merged


if __name__ == "__main__":  # rebuild the shipped table from a test_instruction folder
    import sys

    source = Path(sys.argv[1])
    data = {"note": "sha256 of each query record as canonical JSON (json.dumps sort_keys=True, ensure_ascii=False, "
                    "separators=(',', ':'), UTF-8): stb_queries.query_digest; from "
                    "data/stabletoolbench/solvable_queries/test_instruction, StableToolBench commit aa4ed9f",
            "groups": digest_table(source)}
    DIGESTS.parent.mkdir(parents=True, exist_ok=True)
    DIGESTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{sum(map(len, data['groups'].values()))} digests written to {DIGESTS}")
