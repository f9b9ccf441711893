"""A run's manifest.json: everything that defines the run, each session (its command, start, end, counts) and
the totals; and the check that a run folder holds one run (one model, one method, one set of settings)."""

from __future__ import annotations

import json
import subprocess
import weakref
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import toolbench_adapter
from toolbench_adapter.errors import InputError
from toolbench_adapter.runs.folder import MANIFEST, summarize

from ..config import RunConfig
from ..models.base import weights_of
from .setup_facts import FIELD as SETUP_FIELD
from .setup_facts import agent_facts, coverage_of, setup_facts


def iso_time(seconds: float) -> str:
    """A Unix time as ISO 8601 in UTC, e.g. 2026-11-23T13:30:47Z."""
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def code_version() -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=root, capture_output=True,
                             text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        rev = ""
    return f"toolbench-adapter {toolbench_adapter.__version__}" + (f" ({rev})" if rev else "")


_RUN_CODE_VERSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def run_code_version(run: Any) -> str:
    """code_version() once per run (a Runner): its manifest is written when a session starts and again when it
    ends (or is interrupted), and each ``git describe`` is a process started from the run's."""
    try:
        version = _RUN_CODE_VERSIONS.get(run)
    except TypeError:  # not weak-referenceable
        return code_version()
    if version is None:
        version = _RUN_CODE_VERSIONS[run] = code_version()
    return version


def endpoint_facts(run: Any) -> dict | None:
    """What the run's embedded simulator endpoint was checked to be this session (preflight.simulator_endpoint)."""
    endpoint = getattr(run, "simulator_endpoint", None)
    return endpoint.facts() if endpoint is not None else None


def build_manifest(run: Any, previous: dict | None, started: float | None = None, finished: float | None = None,
                   outcomes: list | None = None, skipped: int = 0, seconds: float = 0.0,
                   ended: float | None = None) -> dict:
    """The manifest of ``run`` (a Runner) over ``previous``. ``started``: a session begins; ``finished``: the
    session ran to its end; ``ended``: it was interrupted then (counts, no "finished")."""
    cfg = run.cfg
    manifest = dict(previous or {})
    manifest.update({
        "name": cfg.name,
        "config": cfg.as_dict(),
        "model": run.effective_model(),
        "backend": cfg.backend,
        "dialect": run.dialect.describe(),
        "parser": run.parser_name,
        "compat": cfg.compat_settings().as_dict(),
        "code_version": run_code_version(run),
        "seed": cfg.seed,
    })
    identity = getattr(run, "identity", None)
    if identity is not None:  # the queries (identity.py): the data root used now, each selected query's digest
        manifest["queries"] = identity.record(manifest)
    weights = weights_of(run.backend)
    if weights:  # a local model's path, or a server's GET /models "root": a judge serving the same weights under
        manifest["weights"] = weights  # another name is still the run's own model (evaluations.same_weights)
    if started is not None:
        manifest.setdefault("sessions", []).append({"started": iso_time(started), "command": run.command,
                                                    **({"stb_root": str(identity.root)} if identity else {})})
    if (finished is not None or ended is not None) and manifest.get("sessions"):
        outcomes = outcomes or []
        failures = Counter(o.failure.kind for o in outcomes if o.failure is not None)
        manifest["sessions"][-1].update({
            **({"finished": iso_time(finished)} if finished is not None else {}), "seconds": round(seconds, 3),
            "ran": len(outcomes), "skipped_as_done": skipped,
            "queries_finished": sum(o.finished for o in outcomes),
            "infra_failures": sum(failures.values()), "infra_failures_by_kind": dict(sorted(failures.items())),
            "failed": sum(failures.values())})  # older readers' name for the same count
    manifest["totals"] = summarize(run.run_dir, cfg.method)
    # against the leaderboard's setup (setup_facts.py); the tool server's counts once a session has ended
    if getattr(run, "tool_coverage", False) is None:  # measured once per Runner session, not per manifest write
        run.tool_coverage = coverage_of(cfg)
    manifest[SETUP_FIELD] = setup_facts(cfg, previous, getattr(run, "tool_session", None)
                                        if (finished is not None or ended is not None) else None,
                                        agent=agent_facts(run), coverage=getattr(run, "tool_coverage", None),
                                        endpoint=endpoint_facts(run))
    return manifest


def check_manifest(run_dir: Path, cfg: RunConfig, model: str | None = None) -> dict | None:
    """The manifest of the run already in the folder, refused when it defines another run: a run folder
    holds one model, one method, one set of settings. ``model``: the model this run asks (None: not known
    yet, before the preflight; the other settings are checked)."""
    path = run_dir / MANIFEST
    if not path.exists():
        return None
    try:
        previous = json.loads(path.read_text())
    except ValueError:
        return None
    old = RunConfig.defining_of(previous.get("config", {}))
    old["model"] = previous.get("model") or old["model"]  # the model that ran, --model given or not
    new = {**cfg.defining(), "model": model}
    changed = {k: (old.get(k), v) for k, v in new.items() if old.get(k) != v and not (k == "model" and v is None)}
    if not changed:
        return previous
    details = "; ".join(f"{k}: {a!r} -> {b!r}" for k, (a, b) in changed.items() if k != "model")
    if "model" not in changed:
        raise InputError(f"{run_dir} holds a different run ({details})",
                         path=path, fix="choose another --name, or delete that folder to start over")
    ran, asks = changed["model"]
    source = "given by --model" if cfg.model else "the model the endpoint serves: no --model given"
    raise InputError(f"{run_dir} holds a run of model {ran!r}, but this command asks {asks!r} ({source})"
                     + (f"; other settings differ too ({details})" if details else "")
                     + ": a run folder holds one model, one method, one set of settings", path=path,
                     field="model", fix=f"to go on with {ran!r}, pass --model {ran} with an endpoint that serves "
                     f"it; for {asks!r}, choose another --name")
