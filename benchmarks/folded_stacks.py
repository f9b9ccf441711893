"""py-spy's folded stacks (``frame;frame;... count``) summarised as the functions that take the most samples, by
own time and by time including callees: the one summary both profile commands print (profile_server.py,
profile_runner.py)."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def find_py_spy() -> str:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        raise SystemExit("py-spy not found: install it with `.venv/bin/pip install py-spy`")
    return py_spy


def add_sampling_options(parser, *, top: int, released_by: str) -> None:
    """The py-spy options both profilers take: --rate, --top, --gil (``released_by``: the system calls that release
    the GIL in the profiled process, named in --gil's help)."""
    parser.add_argument("--rate", type=int, default=400, help="py-spy samples per second (default 400)")
    parser.add_argument("--top", type=int, default=top, help=f"functions listed (default {top})")
    parser.add_argument("--gil", action="store_true",
                        help="only samples of the thread holding the GIL: Python's own work, without the time in "
                             f"system calls that release it ({released_by})")


def short(frame: str) -> str:
    """``func (/long/path/site-packages/pkg/mod.py:12)`` -> ``func (pkg/mod.py:12)``."""
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    for marker in ("site-packages/", str(ROOT) + "/", "/lib/python3"):
        if marker in where:
            where = where.split(marker, 1)[1]
    return f"{name} ({where})" if where else name


def function_of(frame: str) -> str:
    """``func (pkg/mod.py:12)`` -> ``func (pkg/mod.py)``: a function's lines counted together."""
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rstrip(')').rpartition(':')[0] or where.rstrip(')')})" if where else name


def summarise(folded: Path, top: int, *, what: str, keep: Callable[[list[str]], bool] = lambda frames: True,
              drop_frame: Callable[[str], bool] = lambda frame: False, by_function: bool = False,
              no_samples: str = "did py-spy run?") -> str:
    """Own and inclusive sample shares over the stacks ``keep`` accepts (their frames, less those ``drop_frame``
    names). ``by_function``: inclusive shares per function rather than per line. ``what`` names the samples."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = skipped = 0
    for line in folded.read_text(encoding="utf-8").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        frames = [short(frame) for frame in stack.split(";") if not drop_frame(frame)]
        if not frames or not keep(frames):
            skipped += samples
            continue
        total += samples
        own[frames[-1]] += samples
        for name in {function_of(frame) if by_function else frame for frame in frames}:  # each once per stack
            inclusive[name] += samples
    if not total:
        raise SystemExit(f"{folded}: no samples of {what} ({no_samples})")
    left_out = f" ({skipped} samples of the rest left out)" if skipped else ""
    lines = [f"{total} samples of {what}{left_out}", "", f"{'own %':>6s}  function (file:line)"]
    lines += [f"{100 * n / total:6.1f}  {frame}" for frame, n in own.most_common(top)]
    lines += ["", f"{'incl %':>6s}  function ({'file' if by_function else 'file:line'}), callees included"]
    lines += [f"{100 * n / total:6.1f}  {frame}" for frame, n in inclusive.most_common(top)]
    return "\n".join(lines)
