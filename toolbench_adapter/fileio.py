"""Atomic file writes: a temp file in the same folder, then a rename, so a reader (or a resumed run)
never sees half a file, and a crash leaves the old file or none."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes_atomic(path: str | Path, data: bytes, fsync: bool = False) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if fsync:  # answer files: survive a power cut, not only a killed process
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_text_atomic(path: str | Path, text: str, fsync: bool = False) -> Path:
    return write_bytes_atomic(path, text.encode("utf-8"), fsync=fsync)


def write_json_atomic(path: str | Path, data: Any, indent: int | None = 2, fsync: bool = False,
                      ensure_ascii: bool = True) -> Path:
    return write_text_atomic(path, json.dumps(data, indent=indent, ensure_ascii=ensure_ascii), fsync=fsync)


def read_json(path: str | Path, what: str = "file") -> Any:
    """JSON from a file, or an InputError naming the file and where the JSON broke."""
    from .errors import InputError

    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg} at line {exc.lineno})", path=path) from None
