"""A run's identity includes its queries. The manifest records the data root and, per selected query, a digest
of what the model is given (toolbench_adapter/queryset/query_identity.py), and per group the digest of the group's whole
set in that root. A rerun into the folder whose queries differ is refused (exit 2) before any model call:

- a selected query whose id the run knows, with another text or function list;
- a query id the run does not know, in a group whose set differs in this root from the one recorded;
- a group the run does not have, from a root where one of the run's groups differs (another data set).

More groups or queries of the same data stay allowed (``--groups A`` then ``--groups A B``, a larger --limit),
and so does a copy of the same data at another path (the same digests). A manifest written before digests were
recorded resumes as before, with a note: its queries are recorded from then on."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.queryset.queries import Query, QuerySet
from toolbench_adapter.queryset.query_identity import DIGEST_OF, root_identity
from toolbench_adapter.runs.folder import MANIFEST

from ..config import RunConfig, select_queries

SHOWN = 4  # ids named per kind of difference; the rest are counted


@dataclass
class QueryIdentity:
    """This command's queries: the root they come from, the selected ones, and this root's digests of every
    group the command selects or the run already has."""

    root: Path
    selected: list[Query]
    groups: dict[str, dict]  # group -> {"set": digest, "ids": {id: digest}}

    def record(self, manifest: dict) -> dict:
        """The manifest's ``queries``: the data root used now (``roots``: every one used, in order), and the run's
        recorded groups and ids with this session's selected ones added."""
        groups = {g: {"set": v.get("set"), "ids": dict(v["ids"])} for g, v in (recorded_groups(manifest) or {}).items()}
        for query in self.selected:
            mine = self.groups[query.group]
            group = groups.setdefault(query.group, {"set": mine["set"], "ids": {}})
            group["ids"][str(query.query_id)] = mine["ids"][str(query.query_id)]
        roots = list(dict.fromkeys([*recorded_roots(manifest), str(self.root)]))
        return {"root": str(self.root), "roots": roots, "digest": DIGEST_OF, "groups": groups}


def recorded_groups(manifest: dict | None) -> dict | None:
    """group -> {"set", "ids"} of a manifest; None where none is recorded (a folder from before digests, or a
    ``queries`` field this code cannot read)."""
    queries = (manifest or {}).get("queries")
    groups = queries.get("groups") if isinstance(queries, dict) else None
    if not isinstance(groups, dict) or not all(
            isinstance(v, dict) and isinstance(v.get("ids"), dict) for v in groups.values()):
        return None
    return groups


def recorded_roots(manifest: dict | None) -> list[str]:
    """The data roots a run's queries came from, in the order first used (a manifest before ``roots``: its root)."""
    queries = (manifest or {}).get("queries")
    if not isinstance(queries, dict):
        return []
    roots = queries.get("roots") or ([queries["root"]] if queries.get("root") else [])
    return [str(r) for r in roots]


def check_queries(run_dir: Path, cfg: RunConfig, previous: dict | None, note: bool = True) -> QueryIdentity:
    """This command's queries, refused (InputError, exit 2) when the run already in ``run_dir`` (its manifest:
    ``previous``) holds other ones. Reads query files only: no model, no tool server, nothing written.
    ``note``: say so on stderr when the run recorded no digests (a check ahead of the run's own passes False)."""
    query_set = QuerySet(cfg.stb_root)
    selected = select_queries(cfg, query_set)
    recorded = recorded_groups(previous)
    wanted = list(dict.fromkeys([q.group for q in selected] + list(recorded or {})))
    identity = QueryIdentity(root=query_set.root.resolve(), selected=selected,
                             groups=root_identity(query_set, wanted, cfg.flavour, cfg.compat_settings()))
    if previous is None:
        return identity
    if recorded is None:
        if note:
                print(f"tba run: {run_dir / MANIFEST} records no query digests (a run folder from before they were "
                  "recorded): resuming without checking that its queries are this command's; they are recorded "
                  "from now on", file=sys.stderr)
        return identity
    lines = differences(recorded, identity)
    if lines:
        raise InputError(_problem(run_dir, previous, identity, lines), path=run_dir / MANIFEST, field="queries",
                         fix=_fix(previous, identity))
    return identity


def differences(recorded: dict, identity: QueryIdentity) -> list[str]:
    """One line per kind of difference between the run's recorded queries and this command's (none: the same)."""
    current = identity.groups
    differ = [g for g in recorded if current.get(g, {}).get("set") != recorded[g].get("set")]
    changed, unknown, new_groups = [], [], []
    for query in identity.selected:
        qid, group = str(query.query_id), query.group
        if group not in recorded:
            if differ and group not in new_groups:
                new_groups.append(group)
        elif qid in recorded[group]["ids"]:
            if recorded[group]["ids"][qid] != current[group]["ids"][qid]:
                changed.append(f"{group}/{qid}")
        elif group in differ:
            unknown.append(f"{group}/{qid}")
    lines = []
    if changed:
        lines.append(f"{_some(changed)} changed under an id the run has (another query text or function list)")
    if unknown:
        lines.append(f"{_some(unknown)} with an id the run does not have, from a group whose queries differ from the run's")
    if new_groups:
        lines.append(f"group(s) {', '.join(new_groups)} added from another data set (this root's "
                     f"{', '.join(differ[:SHOWN])} differ{'s' if len(differ) == 1 else ''} from the run's)")
    return lines


def _some(ids: list[str]) -> str:
    shown = ", ".join(ids[:SHOWN]) + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")
    return f"{len(ids)} quer{'y' if len(ids) == 1 else 'ies'} ({shown})"


def _problem(run_dir: Path, previous: dict, identity: QueryIdentity, lines: list[str]) -> str:
    root, theirs = str(identity.root), recorded_roots(previous)
    where = (f"the queries at {root} are not the ones the run recorded there" if theirs == [root] else
             f"this command's queries ({root}) are not the run's (from {', '.join(theirs) or 'a root not recorded'})")
    return (f"{run_dir} holds a run of other queries: {where}: " + "; ".join(lines)
            + ". A run folder holds one set of queries: its numbers would mix two")


def _fix(previous: dict, identity: QueryIdentity) -> str:
    others = [r for r in recorded_roots(previous) if r != str(identity.root)]
    fix = "choose a new --name for these queries (or delete that folder to start over)"
    if others:
        fix += f"; to go on with the run's own queries, pass --stb-root {others[-1]}"
    return fix


def merged_record(sources: list[Path], manifests: list[dict]) -> dict | None:
    """The ``queries`` of shards merged into one run: every shard's ids, refused (exit 2) when two shards ran
    other queries (another set of a group, or another digest under one id). None: a shard recorded none."""
    records = [recorded_groups(m) for m in manifests]
    if any(record is None for record in records):
        return None
    groups: dict[str, dict] = {}
    first: dict[str, Path] = {}
    fix = "merge only shards of one run over the same queries (the same --stb-root data)"
    for source, record in zip(sources, records, strict=True):
        for name, group in record.items():
            merged = groups.setdefault(name, {"set": group.get("set"), "ids": {}})
            seen = first.setdefault(name, source)
            if merged["set"] != group.get("set"):
                raise InputError(f"this shard ran another set of {name} queries than {seen} (their digests "
                                 "differ)", path=Path(source) / MANIFEST, field="queries", fix=fix)
            for qid, digest in group["ids"].items():
                if merged["ids"].setdefault(qid, digest) != digest:
                    raise InputError(f"this shard ran query {name}/{qid} with another text or function list than "
                                     f"{seen}", path=Path(source) / MANIFEST, field="queries", fix=fix)
    roots = list(dict.fromkeys(root for m in manifests for root in recorded_roots(m)))
    return {"root": roots[0] if roots else None, "roots": roots, "digest": DIGEST_OF, "groups": groups}
