"""Every name a sweep will give a file or folder, checked at planning time against the filesystem's limits.

A name or label past the limit used to pass --dry-run, run the cell, and fail when its judge wrote a label file
(``OSError: File name too long``, with a "traceback" path that could not exist either). The longest names come
from the sweep's name and each cell's: OUT/NAME and its lock beside it, OUT/NAME/CELL and its lock, and inside the
cell the label files an evaluation writes under the cell's leaderboard row name (``{group}_{row}.meta.json``,
written through a temp file ``.{name}.{pid}-{serial}.tmp``: toolbench_adapter/files/fileio.py). Each is checked
against NAME_MAX of the place it goes, and the deepest path against PATH_MAX, before anything is written
(exit 2 naming the spec's key: ``name`` or the axis value whose label is longest).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluations import _MAX_ID as JUDGE_ID_MAX
from toolbench_adapter.runs.trial_set import trial_name
from toolbench_adapter.structured.describe import row_name

from ..execution.runlock import LOCK_SUFFIX
from .spec import Spec, safe_name

LOCK_EXTRA = len("." + LOCK_SUFFIX)
# the longest label file an evaluation writes under a cell's row name (evaluation/storage.py: {group}_{model})
ROW_FILE = "{group}_{row}.meta.json"
# the deepest path inside a cell's folder: an evaluation's staging folder (".{judge id}.partial-{pid}") and a
# label file's temp in it
STAGING_EXTRA = len("eval/." + ".partial-" + "9" * 7 + "/")
DEFAULT_NAME_MAX, DEFAULT_PATH_MAX = 255, 4096


@dataclass(frozen=True)
class Limits:
    name_max: int  # bytes in one name
    path_max: int  # bytes in a whole path


def limits_at(folder: Path) -> Limits:
    """The limits of the filesystem ``folder`` will be on (its nearest existing ancestor's)."""
    place = Path(os.path.abspath(folder))
    while not place.exists() and place != place.parent:
        place = place.parent
    try:
        return Limits(os.pathconf(place, "PC_NAME_MAX"), os.pathconf(place, "PC_PATH_MAX"))
    except (OSError, ValueError):  # no pathconf for it: Linux's values
        return Limits(DEFAULT_NAME_MAX, DEFAULT_PATH_MAX)


def _bytes(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogateescape"))


def longest_row_file(row: str, groups: list[str]) -> str:
    """The longest name an evaluation writes under ``row`` (as its temp file has it: fileio's atomic writes are
    ".{name}.{pid}-{serial}.tmp", a pid at most 7 digits (Linux's pid_max 4,194,304), the serial 10)."""
    longest = max((ROW_FILE.format(group=g, row=row) for g in groups or ["G1_instruction"]), key=_bytes)
    return f".{longest}.{'9' * 7}-{'9' * 10}.tmp"


def check_sweep_paths(spec: Spec, sweep_dir: Path, plans: list) -> None:
    """InputError (exit 2) when a name the sweep would write is longer than its filesystem allows; nothing written.
    ``plans``: the cells to run (runners/sweep/scheduler.CellPlan: cell, cfg, groups)."""
    limits = limits_at(sweep_dir)
    name_field = "name (or --name)"
    if _bytes(spec.name) + LOCK_EXTRA > limits.name_max:
        raise InputError(f"the sweep's name is {_bytes(spec.name)} bytes; its lock file beside the folder "
                         f"(.NAME{LOCK_SUFFIX}) must fit this filesystem's {limits.name_max} bytes per name",
                         path=spec.path, field=name_field,
                         fix=f"a name of at most {limits.name_max - LOCK_EXTRA} characters")
    for plan in plans:
        cell = plan.cell
        # a cell of K trials is a set of K run folders (CELL/trial-0 ...), each judged under the row CELL@trial-N
        trials = getattr(plan.cfg, "trials", 1) or 1
        trial = f"/{trial_name(trials - 1)}" if trials > 1 else ""
        row = safe_name(row_name(cell.name + trial.replace("/", "@"), plan.cfg.as_dict()))
        names = {f"its folder's lock file .{cell.name}{LOCK_SUFFIX}": _bytes(cell.name) + LOCK_EXTRA,
                 f"the label file its judges write, {ROW_FILE.format(group='GROUP', row=row)}, through a temp file":
                     _bytes(longest_row_file(row, plan.groups))}
        what, size = max(names.items(), key=lambda item: item[1])
        deepest = (_bytes(os.path.abspath(sweep_dir / cell.name)) + _bytes(trial) + 1 + STAGING_EXTRA
                   + JUDGE_ID_MAX + _bytes(longest_row_file(row, plan.groups)))
        if size <= limits.name_max and deepest < limits.path_max:
            continue
        field, label = longest_label(spec, cell)
        if size > limits.name_max:
            problem = (f"cell {cell.name[:60]}{'...' if len(cell.name) > 60 else ''}: {what} would be {size} bytes, "
                       f"more than the {limits.name_max} bytes this filesystem allows in a name")
        else:
            problem = (f"cell {cell.name[:60]}{'...' if len(cell.name) > 60 else ''}: its deepest file would have a "
                       f"path of {deepest} bytes, more than the {limits.path_max} this filesystem allows")
        over = max(size - limits.name_max, deepest - limits.path_max + 1)
        raise InputError(problem, path=spec.path, field=field,
                         fix=f"give {field} a label at least {over} characters shorter than {label[:40]!r}"
                         f"{'...' if len(label) > 40 else ''} (a mapping value takes label: SHORT; a cell's "
                         "folder joins its axes' labels with '__'), or a shorter --out")


def longest_label(spec: Spec, cell) -> tuple[str, str]:
    """The spec's key of the cell's longest axis label (``axes.parser[1]``) and that label."""
    best = ("name (or --name)", spec.name)
    longest = -1
    for axis in spec.axes:
        label = cell.axes[axis.name]
        index = [v.label for v in axis.values].index(label)
        if _bytes(safe_name(label)) > longest:
            best, longest = (f"axes.{axis.name}[{index}]", label), _bytes(safe_name(label))
    return best
