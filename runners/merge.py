"""Join the shards of one run (``tba run --shard i/n`` on several machines) into one run folder."""

from __future__ import annotations

import filecmp
import json
import shutil
from pathlib import Path

from toolbench_adapter.answers.write import write_json_atomic
from toolbench_adapter.errors import InputError
from toolbench_adapter.queries import is_group_name

from .run import ERRORS, MANIFEST, QUERY_STATS, STEPS_DIR, collect_steps, summarize


def merge_runs(sources: list[str | Path], out: str | Path) -> dict:
    sources = [Path(s) for s in sources]
    out = Path(out)
    manifests = []
    for source in sources:
        path = source / MANIFEST
        if not path.exists():
            raise InputError("not a run folder (no manifest.json)", path=source, fix="pass folders written by tba run")
        manifests.append(json.loads(path.read_text()))
    defining = [_defining(m) for m in manifests]
    for source, d in zip(sources[1:], defining[1:], strict=True):
        if d != defining[0]:
            diff = sorted(k for k in d if d[k] != defining[0].get(k))
            raise InputError(f"this shard was run with different settings ({', '.join(diff)})", path=source,
                             fix="merge only shards of the same run")
    out.mkdir(parents=True, exist_ok=True)
    copied = 0
    for source in sources:
        for answer in source.glob("*/*.json"):
            if not is_group_name(answer.parent.name):
                continue  # evaluation outputs are per run, not per shard
            relative = answer.relative_to(source)
            copied += _copy_checked(answer, out / relative)
        for steps in (source / STEPS_DIR).glob("*/*.jsonl"):
            _copy_checked(steps, out / steps.relative_to(source))
        for name in (QUERY_STATS, ERRORS):
            if (source / name).exists():
                with open(out / name, "a", encoding="utf-8") as target:
                    target.write((source / name).read_text(encoding="utf-8"))
    collect_steps(out)
    method = manifests[0]["config"]["method"]
    manifest = {**manifests[0], "name": out.name, "merged_from": [str(s) for s in sources],
                "sessions": [s for m in manifests for s in m.get("sessions", [])]}
    manifest["config"] = {**manifest["config"], "shard": None, "name": out.name}
    manifest["totals"] = summarize(out, method)
    write_json_atomic(out / MANIFEST, manifest)
    return {"answers": copied, **manifest["totals"]}


def _defining(manifest: dict) -> dict:
    from .config import RunConfig

    config = manifest.get("config", {})
    return {key: config.get(key) for key in RunConfig.DEFINING}


def _copy_checked(source: Path, target: Path) -> int:
    """Copy a file; the same file from two shards must be identical (a query run twice is an error)."""
    if target.exists():
        if filecmp.cmp(source, target, shallow=False):
            return 0
        raise InputError("two shards hold different files for the same query", path=target,
                         fix="the shards overlap: check the --shard values")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    return 1
