"""OUT/NAME/sweep.json: the spec a sweep was made by, each cell's state and run folder, and its sessions.

Written atomically after every change of a cell's state, so a sweep killed at any moment says which cells were
done. A rerun reads it: the same spec goes on (done cells are skipped); a spec whose base, axes or judges
changed is another sweep, refused (exit 2) as a run folder refuses other settings, except for axes that only
gained values (their new cells are added).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import write_json_atomic
from toolbench_adapter.report.sweep_record import FORMAT, PENDING, SWEEP_FILE

from .spec import Cell, Spec, recorded_settings, redact, redact_spec, settings_changes


def iso_time(seconds: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds if seconds is not None else time.time()))


class SweepState:
    """sweep.json in memory; ``save`` after each change (thread-safe: cells end on their own threads)."""

    def __init__(self, sweep_dir: Path, record: dict[str, Any]):
        self.sweep_dir = sweep_dir
        self.record = record
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.sweep_dir / SWEEP_FILE

    @classmethod
    def open(cls, sweep_dir: Path, spec: Spec, cells: list[Cell], command: str) -> SweepState:
        """The sweep's state: a new one, or the recorded one checked against this spec (InputError when it is
        another sweep's folder)."""
        path = sweep_dir / SWEEP_FILE
        previous = read_state(path) if path.exists() else None
        if previous is None and sweep_dir.is_dir() and any(sweep_dir.iterdir()):
            raise InputError("the folder holds files but no sweep.json: not a sweep's folder", path=sweep_dir,
                             fix="pass another --out or name (a sweep writes only into its own folder)")
        if previous is not None:
            check_same_sweep(previous, spec, cells, path)
        old_cells = {c["name"]: c for c in (previous or {}).get("cells", [])}
        record = {"format": FORMAT, "name": spec.name, "spec_file": str(spec.path.resolve()), "spec": spec.raw,
                  "spec_sha256": spec.digest(), "axes": [axis.name for axis in spec.axes],
                  "baseline": spec.baseline_cell(), "trials": spec.trials,
                  "judges": [{"label": j.label, "settings": redact(j.settings)} for j in spec.judges],
                  # each cell's resolved settings (config files read): what a rerun checks its own against
                  "cells": [{"name": c.name, "axes": c.axes, "run_dir": c.name, "state": PENDING, "reason": None,
                             "redo": None, "evaluations": {}, "seconds": None,
                             "settings": recorded_settings(c.settings), **old_cells.get(c.name, {})}
                            for c in cells],
                  "sessions": [*(previous or {}).get("sessions", []),
                               {"started": iso_time(), "ended": None, "command": command, "exit": None}]}
        record["spec"] = redact_spec(record["spec"])
        return cls(sweep_dir, record)

    def cell(self, name: str) -> dict[str, Any]:
        return next(c for c in self.record["cells"] if c["name"] == name)

    def update(self, name: str, **changes: Any) -> None:
        with self._lock:
            self.cell(name).update(changes)
            self._save()

    def end(self, exit_status: int) -> None:
        with self._lock:
            self.record["sessions"][-1].update(ended=iso_time(), exit=exit_status)
            self._save()

    def save(self) -> None:
        with self._lock:
            self._save()

    def _save(self) -> None:
        self.sweep_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, self.record)


def read_state(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the sweep's state ({exc})", path=path,
                         fix="restore the file, or run the spec under another name (--name)") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or not isinstance(record.get("cells"), list):
        raise InputError(f"not a sweep state file (format {FORMAT} expected)", path=path, field="format",
                         fix="pass another --out or --name")
    return record


def check_same_sweep(previous: dict, spec: Spec, cells: list[Cell], path: Path) -> None:
    """The recorded sweep is this spec's (a resume), or one this spec extends with new axis values."""
    before = (previous.get("spec") or {})
    now = redact_spec(spec.raw)
    differs = [key for key in ("base", "judges") if before.get(key) != now.get(key)]
    old_axes, new_axes = before.get("axes") or {}, now.get("axes") or {}
    if list(old_axes) != list(new_axes):
        differs.append("axes (their names or order)")
    names = {c.name for c in cells}
    gone = [c["name"] for c in previous.get("cells", []) if c["name"] not in names]
    if gone and "axes (their names or order)" not in differs:
        differs.append(f"axes (cells {', '.join(gone[:3])}{' ...' if len(gone) > 3 else ''} would be left out)")
    if differs:
        raise InputError(f"this folder holds a sweep made by another spec: it differs in {', '.join(differs)}",
                         path=path, field="spec",
                         fix="run it under another name (--name NEW, or name: in the spec), or put the spec back "
                         "as it was (adding values to an axis is fine: only the new cells run)")
    check_same_settings(previous, spec, cells, path)


def check_same_settings(previous: dict, spec: Spec, cells: list[Cell], path: Path) -> None:
    """Each recorded cell's resolved settings against what they resolve to now: a config: file edited between
    runs changes them while the spec's text stays the same, and the matrix would compare the old cells with the
    new ones as if they differed in their axes alone. (A sweep.json written before cells recorded their settings
    has nothing to compare.)"""
    recorded = {c["name"]: c.get("settings") for c in previous.get("cells", []) if isinstance(c, dict)}
    changed = []
    for cell in cells:
        before = recorded.get(cell.name)
        now = recorded_settings(cell.settings)
        if isinstance(before, dict) and before != now:
            changed.append((cell.name, settings_changes(before, now)))
    if not changed:
        return
    configs = sorted({str(layer["config"]) for layer in [spec.base, *(v.settings for a in spec.axes for v in a.values)]
                      if isinstance(layer, dict) and layer.get("config")})
    name, changes = changed[0]
    others = f" (and {len(changed) - 1} more cells)" if len(changed) > 1 else ""
    raise InputError(f"this folder holds a sweep whose cells ran with other settings: cell {name}: "
                     f"{', '.join(changes)}{others}"
                     + (f"; they come from the spec and its config files ({', '.join(configs)}), one of which "
                        "changed since" if configs else ""),
                     path=path, field=f"cells.{name}.settings",
                     fix="put the config file back as it was, or run under another name (--name NEW, or name: in the "
                     "spec): a sweep's cells may differ in their axes only, so the matrix compares like with like")
