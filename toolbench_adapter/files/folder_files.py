"""The files a folder reader may open: regular files only, the rest skipped and said (issue 35 item 5).

A FIFO named like an answer file blocks the reader that opens it (forever, nothing printed), and a link to
/dev/zero reads until memory runs out; a socket or a device is no input either. Every reader of a folder lists
its entries through ``regular_files`` / ``files_under``: links are followed (a link to a regular file is read),
folders are left to the caller's walk, and anything else is skipped, counted and named on stderr once per
listing. ``os.stat`` never opens the entry, so a FIFO cannot block it.
"""

from __future__ import annotations

import os
import stat
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

_SHOWN = 5  # skipped entries named in the notice; the rest counted


_REGULAR, _FOLDER = "regular", "folder"


def _kind(path: Path) -> str:
    """What the entry is after links: _REGULAR, _FOLDER or the name of what cannot be read as a file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "dangling link" if os.path.islink(path) else "unreadable entry"
    if stat.S_ISREG(mode):
        return _REGULAR
    if stat.S_ISDIR(mode):
        return _FOLDER
    for test, name in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def regular_files(paths: Iterable[Path], where: str | Path | None = None, *, say: bool = True) -> list[Path]:
    """``paths`` that are regular files (after links), in order; folders dropped silently; every other entry
    skipped and (``say``) named on stderr with its kind, counted: ``where`` names the folder in that line."""
    kept: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for path in paths:
        path = Path(path)
        kind = _kind(path)
        if kind == _REGULAR:
            kept.append(path)
        elif kind != _FOLDER:
            skipped.append((path, kind))
    if skipped and say:
        print(skipped_notice(skipped, where), file=sys.stderr)
    return kept


def skipped_notice(skipped: list[tuple[Path, str]], where: str | Path | None = None) -> str:
    counts = Counter(kind for _, kind in skipped)
    shown = ", ".join(f"{path} ({kind})" for path, kind in skipped[:_SHOWN])
    more = f", and {len(skipped) - _SHOWN} more" if len(skipped) > _SHOWN else ""
    place = f" in {where}" if where is not None else ""
    return (f"skipped {len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'}{place} that are not regular files "
            f"({', '.join(f'{kind} {n}' for kind, n in sorted(counts.items()))}): {shown}{more}")


def files_under(folder: str | Path, pattern: str = "*", *, recursive: bool = True) -> list[Path]:
    """Regular files matching ``pattern`` below ``folder`` (``recursive``) or in it, sorted."""
    folder = Path(folder)
    found = folder.rglob(pattern) if recursive else folder.glob(pattern)
    return regular_files(sorted(found), folder)
