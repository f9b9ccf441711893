"""Join the shards of one run (``tba run --shard i/n`` on several machines) into one run folder.

Everything is checked before anything is written: each shard's manifest and settings, every answer
file (whole JSON in the upstream shape; a truncated file is refused by name), and files that two
shards hold differently. The merged folder is then built in a temp folder beside ``--out`` and
renamed into place, so a refusal or a crash leaves no half-merged run. A merge killed before it could
clean up (SIGKILL) leaves that temp folder; the next merge into the same --out removes it.
"""

from __future__ import annotations

import contextlib
import filecmp
import glob
import json
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from toolbench_adapter.answers.read import validate_answer
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.comparability import SETUP_FIELD, merge_setups
from toolbench_adapter.files.fileio import (
    OutputPathError,
    check_writable,
    current_umask,
    output_path_error,
    read_json,
    write_json_atomic,
)
from toolbench_adapter.queryset.queries import is_group_name
from toolbench_adapter.runs.folder import (
    ERRORS,
    FAILED_DIR,
    MANIFEST,
    QUERY_STATS,
    STEPS_DIR,
    collect_steps,
    summarize,
)

from ..config import RunConfig
from .identity import merged_record
from .runlock import RunFolderLock, lock_path, pid_alive


def merge_runs(sources: list[str | Path], out: str | Path, *, allow_partial: bool = False) -> dict:
    """Merge holding the lock of every shard and of --out (runlock.py): a shard a run still writes, or an --out
    another command writes, is refused (exit 2) naming that command. A folder given twice, two folders of one
    shard, or a set with a shard missing is refused (exit 2) unless ``allow_partial`` (then the result and the
    manifest say which shards are missing)."""
    command = "tba merge " + " ".join(map(str, sources)) + f" --out {out}"
    shard_fix = "wait for the run writing this shard to end (or stop it and rerun it to its end), then merge"
    folders = {lock_path(s): (s, shard_fix) for s in map(Path, sources) if s.is_dir()}  # a missing one: refused below
    folders.setdefault(lock_path(out), (Path(out), "wait for that command to end, or choose another --out"))
    with contextlib.ExitStack() as locks:
        for folder, fix in folders.values():
            locks.enter_context(RunFolderLock(folder, command, fix=fix))
        return _merge_runs(sources, out, allow_partial)


def _merge_runs(sources: list[str | Path], out: str | Path, allow_partial: bool = False) -> dict:
    sources = [Path(s) for s in sources]
    out = Path(out)
    _check_out(out)
    manifests = [_read_manifest(source) for source in sources]  # each a run folder, before any other check
    _check_distinct(sources)
    defining = [_defining(m) for m in manifests]
    for source, d in zip(sources[1:], defining[1:], strict=True):
        if d != defining[0]:
            diff = sorted(k for k in d if d[k] != defining[0].get(k))
            raise InputError(f"this shard was run with different settings ({', '.join(diff)})", path=source,
                             fix="merge only shards of the same run")
    queries = merged_record(sources, manifests)  # shards of other queries: refused
    partial = _check_shard_set(sources, manifests, allow_partial)
    plan = _plan(sources)  # every check that can refuse happens here, before the first write
    check_writable(out.parent)
    remove_stale_staging(out)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=_staging_head(out) + f"{os.getpid()}@{_HOST}-"))
    try:
        for relative, source in plan.items():
            (staging / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, staging / relative)
        for name in (QUERY_STATS, ERRORS):
            parts = [(s / name).read_text(encoding="utf-8") for s in sources if (s / name).exists()]
            if parts:
                (staging / name).write_text("".join(p if p.endswith("\n") or not p else p + "\n" for p in parts),
                                            encoding="utf-8")
        collect_steps(staging)
        method = manifests[0]["config"]["method"]
        manifest = {**manifests[0], "name": out.name, "merged_from": [str(s) for s in sources],
                    "sessions": [s for m in manifests for s in m.get("sessions", [])]}
        manifest["config"] = {**manifest["config"], "shard": None, "name": out.name}
        manifest.pop("queries", None)  # a shard without digests: the merged run's queries are not known
        if queries is not None:
            manifest["queries"] = queries
        if partial:
            manifest["merged_partial"] = partial
        manifest["totals"] = summarize(staging, method)
        if any(SETUP_FIELD in m for m in manifests):  # every shard's queries and tool-server counts
            manifest[SETUP_FIELD] = merge_setups([m.get(SETUP_FIELD) for m in manifests])
        write_json_atomic(staging / MANIFEST, manifest, fsync=True)
        os.chmod(staging, 0o777 & ~current_umask())  # mkdtemp makes 0700; a run folder is as mkdir would make it
        if out.exists():
            out.rmdir()  # empty (checked above); rename() cannot replace a folder that exists
        os.rename(staging, out)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(exc, OutputPathError):  # already names its path and fix
            raise
        raise output_path_error(out, exc) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    answers = sum(1 for relative in plan if is_group_name(Path(relative).parts[0]))
    return {"answers": answers, **manifest["totals"], **({"partial": partial} if partial else {})}


def _check_distinct(sources: list[str | Path]) -> None:
    """The same folder named twice (``tba merge A A``) would copy its queries.jsonl lines twice."""
    seen: dict[Path, Path] = {}
    for source in map(Path, sources):
        earlier = seen.setdefault(source.resolve(), source)
        if earlier is not source:
            raise InputError(f"the same shard folder is given twice ({earlier} and {source})", path=source,
                             fix="name each shard folder once")


def _check_shard_set(sources: list[Path], manifests: list[dict], allow_partial: bool) -> str | None:
    """Each shard i/n once, all of one split, none missing; None, or (``allow_partial``) what is missing."""
    by_index: dict[int, Path] = {}
    splits: dict[int, Path] = {}
    for source, manifest in zip(sources, manifests, strict=True):
        shard = manifest["config"].get("shard")
        if not shard:
            continue  # a whole run (no --shard): nothing to pair
        index, _, count = str(shard).partition("/")
        if not (index.isdigit() and count.isdigit()):
            raise InputError(f"the manifest's shard {shard!r} is not i/n", path=source / MANIFEST,
                             field="config.shard", fix="pass folders written by tba run --shard i/n")
        splits.setdefault(int(count), source)
        if len(splits) > 1:
            (n1, first), (n2, other) = list(splits.items())[:2]
            raise InputError(f"shards of two different splits: {first} is one of {n1}, {other} one of {n2}",
                             path=source, fix="merge the shards of one split (the same n in --shard i/n)")
        earlier = by_index.setdefault(int(index), source)
        if earlier is not source:
            raise InputError(f"two folders of shard {shard} ({earlier} and {source}): its queries would be "
                             "merged twice", path=source, fix="pass each shard once")
    if not splits:
        return None
    count = next(iter(splits))
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in by_index]
    if not missing:
        return None
    text = f"{len(by_index)} of {count} shards merged; missing: {', '.join(missing)}"
    if not allow_partial:
        raise InputError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of the run "
                         f"{'are' if len(missing) > 1 else 'is'} missing ({len(by_index)} of {count} given): the "
                         "merged run would lack their queries", field="shards",
                         fix=f"pass every shard folder (run the missing one{'s' if len(missing) > 1 else ''} with "
                         "tba run --shard i/n first), or --allow-partial to merge these alone (marked partial)")
    print(f"tba merge: PARTIAL: {text} (--allow-partial)", file=sys.stderr)
    return text


# staging folders are named .{out}.merging-{pid}@{host}-{random}: a merge that was killed (SIGKILL, a lost
# node) leaves its own behind, and the next merge into the same --out removes it once that pid is gone
_HOST = socket.gethostname()


def _staging_head(out: Path) -> str:
    return f".{out.name}.merging-"


def remove_stale_staging(out: Path) -> list[Path]:
    """Remove the staging folders of killed merges into ``out`` (this host, process gone); name on stderr the
    ones whose owner cannot be checked (another host, or written before staging names held the pid)."""
    head = _staging_head(out)
    removed = []
    for path in sorted(out.parent.glob(glob.escape(head) + "*")):
        owner, _, rest = path.name[len(head):].partition("@")
        host = rest.rpartition("-")[0]
        if owner.isdigit() and host == _HOST and not pid_alive(int(owner)):
            shutil.rmtree(path, ignore_errors=True)
            print(f"tba merge: removed {path}, the staging folder of a merge that was killed (pid {owner})",
                  file=sys.stderr)
            removed.append(path)
        elif not (owner.isdigit() and host == _HOST):
            print(f"tba merge: {path} is the staging folder of another merge into {out} that this host cannot "
                  "check; delete it once no merge into that folder runs", file=sys.stderr)
    return removed


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise OutputPathError("the merged run folder is a file", path=out, fix="choose a new folder for --out")
    if out.is_dir() and any(out.iterdir()):
        raise OutputPathError("the merged run folder exists and is not empty", path=out,
                              fix="choose a new folder for --out (or remove this one): merge never mixes runs")


def _read_manifest(source: Path) -> dict:
    path = source / MANIFEST
    if not path.exists():
        raise InputError("not a run folder (no manifest.json)", path=source,
                         fix="give the folders `tba run --shard i/n` wrote (results/runs/NAME)")
    manifest = read_json(path, "manifest")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("config"), dict):
        raise InputError("a run manifest must be an object with a config", path=path, field="config",
                         fix="pass folders written by tba run")
    return manifest


def _plan(sources: list[Path]) -> dict[str, Path]:
    """relative path in the merged run -> the shard file to copy there; refuses bad or conflicting files."""
    plan: dict[str, Path] = {}
    for source in sources:
        files = [p for p in source.glob("*/*.json") if is_group_name(p.parent.name)]
        for answer in files:
            _check_answer(answer)
        files += list((source / STEPS_DIR).glob("*/*.jsonl")) + list((source / FAILED_DIR).glob("*/*.json"))
        for path in sorted(files):
            relative = path.relative_to(source).as_posix()
            earlier = plan.setdefault(relative, path)
            if earlier != path and not filecmp.cmp(earlier, path, shallow=False):
                raise InputError(f"two shards hold different files for the same query (the other: {earlier})",
                                 path=path, fix="the shards overlap: check the --shard values")
    return plan


def _check_answer(path: Path) -> None:
    """A shard's answer file must be whole and in the upstream shape, or the merge refuses it by name."""
    fix = f"delete {path.name} and rerun that shard with the same command (it redoes the query), then merge again"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"answer file is not valid JSON ({exc}): cut short?", path=path, fix=fix) from None
    except RecursionError:  # json's answer to nesting deeper than it follows: no answer file we write
        raise InputError("answer file nests deeper than the JSON parser follows: not an answer file", path=path,
                         fix=fix) from None
    try:
        validate_answer(data, path)
    except InputError as exc:
        raise InputError(f"not a whole answer file: {exc.problem}", path=path, field=exc.field, fix=fix) from None


def _defining(manifest: dict) -> dict:
    defining = RunConfig.defining_of(manifest.get("config", {}))
    # the model that ran (adopted from the endpoint when --model was not given): shards of two models differ
    defining["model"] = manifest.get("model") or defining["model"]
    return defining


def merge_sets(sources: list[str | Path], out: str | Path, *, allow_partial: bool = False) -> dict:
    """Join the shards of a set of trials (``tba run --trials K --shard i/n`` on several machines): trial by trial,
    each with merge_runs' checks, into a staging set renamed into place at the end (a refusal in any trial leaves
    nothing at --out); the merged set's record (trials.json) names its shards. Every shard must be a set of the same
    number of trials (exit 2 otherwise)."""
    from toolbench_adapter.runs.trial_set import TRIALS, is_trial_set, read_trials, trial_dir

    from .trials import set_totals

    sources, out = [Path(s) for s in sources], Path(out)
    if not all(is_trial_set(s) for s in sources):
        plain = next(s for s in sources if not is_trial_set(s))
        raise InputError("this folder is not a set of trials, the others are: a set merges only with sets",
                         path=plain, fix="merge the shards of one tba run --trials K (each a folder with trials.json)")
    records = [read_trials(s) for s in sources]
    counts = {r["trials"] for r in records}
    if len(counts) > 1:
        raise InputError(f"the shards hold different numbers of trials ({', '.join(map(str, sorted(counts)))})",
                         path=sources[0], field="trials", fix="run every shard with the same --trials, then merge")
    _check_out(out)
    check_writable(out.parent)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=_staging_head(out) + f"{os.getpid()}@{_HOST}-"))
    try:
        merged = [merge_runs([trial_dir(s, i) for s in sources], trial_dir(staging, i), allow_partial=allow_partial)
                  for i in range(records[0]["trials"])]
        record = {**records[0], "name": out.name, "merged_from": [str(s) for s in sources],
                  "sessions": [s for r in records for s in r.get("sessions", [])]}
        record["config"] = {**record["config"], "shard": None, "name": out.name}
        record["totals"] = set_totals(staging, record["trials"])
        write_json_atomic(staging / TRIALS, record, fsync=True)
        os.chmod(staging, 0o777 & ~current_umask())
        if out.exists():
            out.rmdir()
        os.rename(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"trials": record["trials"], **{k: v for k, v in record["totals"].items() if k != "trials"},
            "per_trial": merged}
