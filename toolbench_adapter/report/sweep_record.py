"""OUT/NAME/sweep.json, the record `tba sweep` keeps (runners/sweep/state.py writes it): its names and its reader,
which checks every field the readers use (sweep_matrix.py, and compare-runs on a sweep folder: parser_runs.py)."""

from __future__ import annotations

from pathlib import Path

from toolbench_adapter.files.fileio import read_json

from ..errors import InputError

SWEEP_FILE = "sweep.json"
FORMAT = "tba-sweep/1"
DONE, FAILED, PENDING, RUNNING = "done", "failed", "pending", "running"  # a cell's state
STATES = (DONE, FAILED, PENDING, RUNNING)
SWEEP_FIX = "pass the folder `tba sweep SPEC.yaml` wrote (OUT/NAME, default results/sweeps/NAME); run the spec " \
            "again to rewrite its sweep.json (finished cells are kept)"


def _require(ok: bool, path: Path, field_name: str | None, problem: str, fix: str = SWEEP_FIX) -> None:
    if not ok:
        raise InputError(problem, path=path, field=field_name, fix=fix)


def _text(value) -> bool:
    return isinstance(value, str) and bool(value)


def read_sweep(sweep_dir: str | Path) -> dict:
    """OUT/NAME/sweep.json, checked: exit 2 naming the file, the field and the fix when it is missing or malformed."""
    path = Path(sweep_dir) / SWEEP_FILE
    if not path.is_file():
        raise InputError("no sweep.json here: not a sweep folder", path=path, fix=SWEEP_FIX)
    try:
        data = read_json(path, "sweep record")
    except InputError as exc:
        raise InputError(exc.problem, path=path, fix=SWEEP_FIX) from None
    _require(isinstance(data, dict), path, None, "not a JSON object")
    _require(data.get("format") == FORMAT, path, "format", f"is {data.get('format')!r}, not {FORMAT!r}")
    _require(_text(data.get("name")), path, "name", "missing or not a name")
    axes = data.get("axes")
    _require(isinstance(axes, list) and bool(axes) and all(map(_text, axes)), path, "axes",
             "must be the list of axis names, in the spec's order")
    judges = data.get("judges")
    _require(isinstance(judges, list) and all(isinstance(j, dict) and _text(j.get("label")) for j in judges),
             path, "judges", "must be a list of {label, settings}")
    labels = [j["label"] for j in judges]
    _require(len(set(labels)) == len(labels), path, "judges", f"two judges share a label ({', '.join(labels)})")
    cells = data.get("cells")
    _require(isinstance(cells, list) and bool(cells), path, "cells", "must be a non-empty list of cells")
    for index, cell in enumerate(cells):
        where = f"cells[{index}]"
        _require(isinstance(cell, dict), path, where, "not an object")
        _require(_text(cell.get("name")), path, f"{where}.name", "missing")
        _require(isinstance(cell.get("axes"), dict) and all(a in cell["axes"] for a in axes), path, f"{where}.axes",
                 f"must give a value for every axis ({', '.join(axes)})")
        _require(_text(cell.get("run_dir")), path, f"{where}.run_dir",
                 "missing (the run folder, relative to the sweep)")
        _require(cell.get("state") in STATES, path, f"{where}.state",
                 f"is {cell.get('state')!r}, not one of {', '.join(STATES)}")
        evaluations = cell.get("evaluations") or {}
        _require(isinstance(evaluations, dict) and all(v is None or _text(v) for v in evaluations.values()), path,
                 f"{where}.evaluations", "must map judge labels to evaluation ids (or null)")
    names = [cell["name"] for cell in cells]
    _require(len(set(names)) == len(names), path, "cells", "two cells share a name")
    baseline = data.get("baseline")
    _require(baseline is None or baseline in names, path, "baseline",
             f"{baseline!r} names no cell (cells: {', '.join(names)})")
    return data
