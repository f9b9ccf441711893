"""Atomic file writes: a temp file in the same folder, then a rename, so a reader (or a resumed run)
never sees half a file, and a crash leaves the old file or none.

Files get the mode a plain ``open(path, "w")`` would give (0666 less the umask), not mkstemp's 0600.
A place that cannot be written (a file in the way of a folder, a read-only folder) raises
``OutputPathError``, an InputError (exit 2) naming the path and the fix, never a bare OSError."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from toolbench_adapter.errors import InputError
from toolbench_adapter.files import input_files
from toolbench_adapter.files.json_indent import dumps_indented

_UMASK_LOCK = threading.Lock()


class OutputPathError(InputError, OSError):
    """An output path that cannot be written; the CLI maps it to exit status 2 like any InputError. Also an
    OSError, so code that already tolerates a failed write (``except OSError``) keeps doing so."""


def output_path_error(path: str | Path, exc: OSError) -> OutputPathError:
    """The OutputPathError for an OSError met while creating or replacing ``path``."""
    reason = exc.strerror or type(exc).__name__
    blocker = Path(exc.filename) if getattr(exc, "filename", None) else Path(path)
    if isinstance(exc, (NotADirectoryError, FileExistsError)) or (blocker.exists() and not blocker.is_dir()
                                                                  and blocker != Path(path)):
        fix = f"a file is in the way of a folder ({_in_the_way(Path(path))}): move it or choose another output path"
    elif isinstance(exc, IsADirectoryError):
        fix = "a folder has the name the output file needs: remove it or choose another output path"
    else:
        fix = "choose an output path you can write (check the folder's permissions and free space)"
    return OutputPathError(f"cannot write here ({reason})", path=path, fix=fix)


def _in_the_way(path: Path) -> Path:
    """The first existing non-folder among the path's parents (what blocks mkdir), else the path."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return parent
    return path


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows (threads write files concurrently)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:  # no /proc: set and restore (the lock keeps our own writers from racing)
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def check_writable(folder: str | Path) -> Path:
    """Preflight for a command that will write under ``folder``, before any work is spent: no file stands
    in the way of it or of a parent, and a file can be created in its nearest existing ancestor. Creates
    nothing that stays (a probe file is made and removed). Raises OutputPathError otherwise."""
    folder = Path(folder)
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise output_path_error(folder, NotADirectoryError(20, "Not a directory", str(existing)))
    try:
        fd, probe = tempfile.mkstemp(dir=existing, prefix=".tba-write-check.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise output_path_error(folder, exc) from None
    return folder


def check_output_file(path: str | Path) -> Path:
    """Preflight for one output file: its folder can be written and no folder sits at its name."""
    path = Path(path)
    if path.is_dir():
        raise OutputPathError("cannot write a file here: it is a folder", path=path,
                              fix="name a file (e.g. add /out.json), or remove the folder")
    check_writable(path.parent)
    return path


_TMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_tmp_serial = itertools.count()  # next() is atomic in CPython: unique temp names across threads


def _create_temp(folder: Path, name: str) -> tuple[int, str]:
    """A new temp file next to ``name``, created with mode 0666 so the kernel applies the umask: the mode a
    plain ``open(path, "w")`` gives, without mkstemp's 0600 and a chmod after it (both cost CPU per write).
    The name is unique within the process (pid, serial); O_EXCL skips one a killed earlier process left."""
    while True:
        tmp = os.path.join(folder, f".{name}.{os.getpid()}-{next(_tmp_serial)}.tmp")
        try:
            return os.open(tmp, _TMP_FLAGS, 0o666), tmp
        except FileExistsError:
            continue


def _write_all(fd: int, data: bytes) -> None:
    """All of ``data`` to ``fd``, straight to the descriptor: no file object (and its buffer) per write."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_bytes_atomic(path: str | Path, data: bytes, fsync: bool = False) -> Path:
    path = Path(path)
    try:
        try:
            fd, tmp = _create_temp(path.parent, path.name)
        except FileNotFoundError:  # the folder is made on the first write into it, not checked on every one
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = _create_temp(path.parent, path.name)
    except OSError as exc:
        raise output_path_error(path, exc) from None
    try:
        try:  # the bytes straight to the descriptor: no file object (os.fdopen's buffer) per write
            _write_all(fd, data)
            if fsync:  # answer files: survive a power cut, not only a killed process
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise output_path_error(path, exc) from None
        raise
    return path


_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


def _open_append(path: str | Path) -> int:
    try:
        return os.open(path, _APPEND_FLAGS, 0o666)
    except FileNotFoundError:  # the folder is made on the first append into it, not checked on every one
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, _APPEND_FLAGS, 0o666)


class AppendFiles:
    """The files a run appends to while its queries run (queries.jsonl, errors.jsonl, steps.jsonl), each opened
    once (O_APPEND) and kept open until ``close()``: an append is one write, not open, write and close. Each
    system call lets another thread take the GIL, and at concurrency 32 the wait to get it back, not the call,
    is what a query's files cost (benchmarks/bench_runner.py). O_APPEND puts each write whole at the end of the
    file, so appends of several threads need no lock. ``close()`` waits for the writes in progress (a closed
    descriptor's number can be reused by the next file opened: a late write must never reach that file), and
    an append after it opens the file again."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}
        self._writing = 0  # appends between taking a descriptor and giving it back
        self._idle = threading.Condition()

    def append(self, path: str | Path, data: bytes) -> None:
        key = str(path)
        with self._idle:
            fd = self._fds.get(key)
            if fd is None:
                fd = self._fds[key] = _open_append(key)
            self._writing += 1
        try:
            _write_all(fd, data)
        finally:
            with self._idle:
                self._writing -= 1
                if not self._writing:
                    self._idle.notify_all()

    def __del__(self) -> None:  # a runner used without run() (tests drive run_query): its files close with it
        with contextlib.suppress(OSError, TypeError, AttributeError):  # (at exit, os may already be gone)
            for fd in self._fds.values():
                os.close(fd)

    def close(self) -> None:
        """Close every file (before one of them is rewritten whole, and at the end of a session)."""
        with self._idle:
            self._idle.wait_for(lambda: not self._writing)
            fds, self._fds = self._fds, {}
        for fd in fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)


def utf8_safe(text: str) -> str:
    """``text`` with lone surrogates (which UTF-8 cannot encode) written as JSON ``\\ud800``-style escapes: inside a
    JSON string that is the JSON escape of the same character, so JSON stays valid and round-trips."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return text


def write_text_atomic(path: str | Path, text: str, *, fsync: bool = False) -> Path:
    """The project's one atomic text writer (temp file in the same folder + os.replace): readers see the old
    file or the new one, never half. ``fsync``: answer files and manifests (resume trusts a file on disk)."""
    try:  # one encoding: utf8_safe's check encodes too
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = utf8_safe(text).encode("utf-8")
    return write_bytes_atomic(path, data, fsync=fsync)


def write_json_atomic(path: str | Path, data: Any, *, indent: int | None = 2, fsync: bool = False,
                      ensure_ascii: bool = True) -> Path:
    """The project's one atomic JSON writer: ``json.dumps(data, indent=indent, ensure_ascii=ensure_ascii)``'s
    bytes, written as write_text_atomic writes. Answer files and manifests pass ``fsync=True``; converted
    files (as upstream writes them) ``indent=None``."""
    text = (json.dumps(data, ensure_ascii=ensure_ascii) if indent is None  # the C encoder: already fast
            else dumps_indented(data, indent=indent, ensure_ascii=ensure_ascii))  # json.dumps's bytes, faster
    return write_text_atomic(path, text, fsync=fsync)


def read_json(path: str | Path, what: str = "file", kind: str = "run record") -> Any:
    """JSON from one of the project's own records (a manifest, sweep.json, evaluation.json, a judge card: ``kind``
    names the limit), read by input_files.read_json: an InputError naming the file (``what``) otherwise."""
    return input_files.read_json(path, kind, what=what)
