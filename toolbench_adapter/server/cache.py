"""The response cache, in StableToolBench's layout, indexed once and held in memory.

Layout (upstream): ``{root}/{category}/{tool}_for_{category}/{api}.json``, each file a JSON object mapping
``str(parsed_tool_input)`` (the Python repr) to a stored answer ``{"error": ..., "response": ...}``.

Simulated entries are marked by a mirror tree in the same layout: ``{root}/_simulated/{category}/
{tool}_for_{category}/{api}.json`` holds exactly the entries a simulator produced (same key -> answer
format, so any upstream reader can read it too). A key present there is simulated, whether or not it is
also in the main file. With ``simulated_into_main`` (compat stb: upstream stores simulated answers in the
cache) they are written to both; otherwise (strict) only to the mirror tree, so the main tree stays real.

Upstream re-reads the JSON file on every request; here the folder is listed once at start, a file is
parsed on its first use and kept, and a cache hit never touches the disk. A file that is not valid JSON
is served as empty and never written over.

Several servers (processes, or machines on a shared filesystem) may share one folder and lose nothing:
a write takes an inter-process lock (``flock`` on the file's folder; where a filesystem cannot lock a folder,
NFS, on one of a few lock files in ``{root}/.tba-locks/``, safe to delete while no server runs), re-reads
the file when another process replaced it since this one last read or wrote it (inode, mtime and size
differ), keeps every entry on disk, adds its own, and writes a temp file then os.replace. A miss looks at
the same signature (one stat, a read only when it changed) before a simulator runs, so a server serves
what another one saved.

A server adds at most MAX_FILE_ENTRIES entries to one API's file, and none to a file of MAX_FILE_BYTES or more
on disk: past either, a new answer is served but neither kept nor saved (said once per file). A server that
takes any arguments (no validation) grew one file to 21.7 MB, rewritten whole on every miss; the bound keeps
each rewrite small. Files built by ``tba cache build`` may be larger: they are read, never refused.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from stat import S_ISREG
from typing import Any

from toolbench_adapter.files.fileio import output_path_error, write_json_atomic
from toolbench_adapter.files.folder_files import files_under

from .names import SIMULATED_DIR, ApiKey

try:
    import fcntl
except ImportError:  # not POSIX: writers in one process still never lose entries, several processes may
    fcntl = None

log = logging.getLogger(__name__)

LOCK_DIR = ".tba-locks"  # lock files, only where folders cannot be locked
LOCK_STRIPES = 64  # thread locks (and fallback lock files): chosen by a hash of the folder's path

MAX_FILE_ENTRIES = 5000  # per API file; StableToolBench's own files hold far fewer per API
MAX_FILE_BYTES = 8 << 20  # 8 MiB on disk: each new entry rewrites the file

Signature = tuple[int, int, int]  # (inode, mtime in ns, size): os.replace by anyone changes the inode


def _signature(path: Path) -> Signature | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns, stat.st_size


class FileLocks:
    """Write locks shared by every process using one cache folder, one per tool folder: ``flock`` on the
    folder itself, so the cache holds nothing but its layout. A thread lock per stripe too: flock excludes
    the threads of one process on Linux, but NFS emulates it with per-process POSIX locks, which do not."""

    def __init__(self, root: Path):
        self.root = root
        self._threads = [threading.Lock() for _ in range(LOCK_STRIPES)]

    @contextlib.contextmanager
    def hold(self, folder: Path) -> Iterator[None]:
        """Exclusive, across processes, for the files of ``folder`` (made if missing)."""
        stripe = zlib.crc32(os.fsencode(folder)) % LOCK_STRIPES
        with self._threads[stripe]:
            if fcntl is None:
                yield
                return
            fd = self._lock(folder, stripe)
            try:
                yield
            finally:
                os.close(fd)  # releases the lock

    def _lock(self, folder: Path, stripe: int) -> int:
        cloexec = getattr(os, "O_CLOEXEC", 0)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | cloexec)
        except OSError as exc:
            raise output_path_error(folder, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fd
        except OSError:  # NFS: an exclusive lock needs a file open for writing
            os.close(fd)
        path = self.root / LOCK_DIR / f"{stripe}.lock"
        try:
            path.parent.mkdir(exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | cloexec, 0o666)
        except OSError as exc:
            raise output_path_error(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        return fd


class _Store:
    """One tree (main or simulated): relative path -> entries, loaded lazily."""

    def __init__(self, root: Path | None, locks: FileLocks | None = None):
        self.root = root
        self.files: set[str] = set()
        self.entries: dict[str, dict] = {}
        self.broken: set[str] = set()
        self.signatures: dict[str, Signature | None] = {}  # the file as this process last read or wrote it
        # a new value (unique, from a counter: no lost update between threads) after each change to entries
        # already in memory: replies prepared from the cache (handler.answer_hit) are dropped when it moves
        self.changes = 0
        self._change_ids = itertools.count(1)
        self.file_locks = locks
        self.full: set[str] = set()  # files at their bound (MAX_FILE_ENTRIES / MAX_FILE_BYTES): said once
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        if root is not None and root.is_dir():
            for path in files_under(root, "*/*/*.json", recursive=False):  # a FIFO there would block a miss
                self.files.add(path.relative_to(root).as_posix())

    def lock(self, rel: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(rel, threading.Lock())

    def get_file(self, rel: str) -> dict:
        entries = self.entries.get(rel)
        if entries is not None:
            return entries
        with self.lock(rel):
            if rel in self.entries:
                return self.entries[rel]
            entries = {}
            if rel in self.files:
                entries, signature = self._load(rel)
                if entries is None:
                    log.warning("cache file %s unreadable: served as empty, never overwritten", self.root / rel)
                    self.broken.add(rel)
                    entries = {}
                self.signatures[rel] = signature
            self.entries[rel] = entries
            return entries

    def _load(self, rel: str) -> tuple[dict | None, Signature | None]:
        """(entries, signature of what was read); entries None when the file is not a readable JSON object."""
        path = self.root / rel
        try:
            if not S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open below: not a cache file
                log.debug("cache file %s is not a regular file", path)
                return None, None
            with open(path, encoding="utf-8") as handle:
                stat = os.fstat(handle.fileno())  # the file read, even if another process replaces the name now
                data = json.load(handle)
        except FileNotFoundError:
            return {}, None
        except (OSError, ValueError, RecursionError) as exc:
            log.debug("cache file %s unreadable (%s)", path, exc)
            return None, None
        signature = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        return (data if isinstance(data, dict) else None), signature

    def known(self, rel: str) -> dict | None:
        """The entries of a file this tree has (on disk or in memory), else None."""
        if rel in self.entries or rel in self.files:
            return self.get_file(rel)
        return None

    def refresh(self, rel: str) -> bool:
        """Take in what another process saved to this file since this one read or wrote it (a stat; a read
        only when it changed). True when the entries in memory changed. For misses only: hits stay in memory."""
        if self.root is None or rel in self.broken:
            return False
        if _signature(self.root / rel) in (None, self.signatures.get(rel, None)):
            return False
        self.get_file(rel)
        with self.lock(rel):
            disk, signature = self._load(rel)
            if disk is None or signature == self.signatures.get(rel):
                return False  # half-written by a writer that is not atomic, or gone: asked again on the next miss
            self.entries[rel] = _merged(disk, self.entries[rel])
            self.signatures[rel] = signature
            self.files.add(rel)
            self.changes = next(self._change_ids)
            return True

    def put(self, rel: str, key: str, value: Any, save: bool) -> bool:
        """Add one entry (memory always; disk when ``save``). Returns True when written to disk. Raises
        OSError (fileio.OutputPathError) when the disk refuses: memory has the entry, the file is unchanged."""
        try:
            return self._put(rel, key, value, save)
        finally:
            self.changes = next(self._change_ids)  # after the change, so nothing prepared before it survives

    def _at_bound(self, rel: str, entries: int) -> bool:
        """Whether the file takes no more entries; said once per file when it first does not."""
        size = (_signature(self.root / rel) or (0, 0, 0))[2] if self.root is not None else 0
        if entries < MAX_FILE_ENTRIES and size < MAX_FILE_BYTES:
            return False
        if rel not in self.full:
            self.full.add(rel)
            log.warning("cache file %s holds %d entries (%d bytes): at its bound (%d entries, %d bytes), new "
                        "answers for this API are served but not cached", self.root / rel if self.root else rel,
                        entries, size, MAX_FILE_ENTRIES, MAX_FILE_BYTES)
        return True

    def _put(self, rel: str, key: str, value: Any, save: bool) -> bool:
        self.get_file(rel)
        with self.lock(rel):
            if key not in self.entries[rel] and self._at_bound(rel, len(self.entries[rel])):
                return False  # served, not kept: memory and the file stay bounded
            if not save or self.root is None or rel in self.broken:
                self.entries[rel][key] = value
                return False
            path = self.root / rel
            with self.file_locks.hold(path.parent):
                merged = self.entries[rel]
                if _signature(path) != self.signatures.get(rel):  # another process wrote it: keep its entries
                    disk, signature = self._load(rel)
                    if disk is None:
                        self.entries[rel][key] = value
                        log.warning("cache file %s was replaced by something unreadable: %r kept in memory, "
                                    "the file not written over", path, key)
                        return False
                    merged = _merged(disk, merged)
                    self.signatures[rel] = signature
                merged = {**merged, key: value}
                self.entries[rel] = merged  # served from memory even if the write below fails
                write_cache_file(path, merged, self.root)
                self.signatures[rel] = _signature(path)
                self.files.add(rel)
                return True


def _merged(disk: dict, memory: dict) -> dict:
    """The file's entries in its order, then those only this process has (a write that failed earlier)."""
    merged = dict(disk)
    for key, value in memory.items():
        merged.setdefault(key, value)
    return merged


def write_cache_file(path: Path, data: Any, root: Path) -> None:
    """A cache file, only inside the cache folder, written by fileio.write_json_atomic (readers see the old file
    or the new one, never half)."""
    resolved_root = root.resolve()
    target = path.resolve()
    if resolved_root not in target.parents:
        raise ValueError(f"refusing to write {target}: outside {resolved_root}")
    write_json_atomic(target, data, indent=2, ensure_ascii=False)


class ResponseCache:
    def __init__(self, root: str | Path | None = None, save: bool = True, simulated_into_main: bool = True):
        self.root = Path(root).resolve() if root is not None else None
        if self.root is not None and self.root.exists() and not self.root.is_dir():
            raise NotADirectoryError(str(self.root))
        self.save = save and self.root is not None
        self.simulated_into_main = simulated_into_main
        locks = FileLocks(self.root) if self.root is not None else None
        self.main = _Store(self.root, locks)
        self.simulated = _Store(self.root / SIMULATED_DIR if self.root is not None else None, locks)
        self.main.files = {rel for rel in self.main.files if not rel.startswith(SIMULATED_DIR + "/")}
        self.save_failures = 0  # answers that could not be written (a full disk, a folder made read-only)
        self.last_save_error: str | None = None

    @property
    def file_count(self) -> int:
        return len(self.main.files)

    def lookup(self, api: ApiKey, key: str) -> tuple[Any, bool] | None:
        """(answer, simulated) for a cached key, else None. A miss first takes in what other servers sharing
        the folder saved to this API's files."""
        rel = api.relative_path()
        hit = self._lookup(rel, key)
        if hit is None and (self.main.refresh(rel) | self.simulated.refresh(rel)):
            hit = self._lookup(rel, key)
        return hit

    def _lookup(self, rel: str, key: str) -> tuple[Any, bool] | None:
        simulated = self.simulated.known(rel)
        main = self.main.known(rel)
        if main is not None and key in main:
            return main[key], bool(simulated) and key in simulated
        if simulated is not None and key in simulated:
            return simulated[key], True
        return None

    @property
    def generation(self) -> tuple[int, int]:
        """Changes to entries already in memory so far (another server's save taken in, an answer added):
        replies prepared from the cache are valid while it stays the same."""
        return self.main.changes, self.simulated.changes

    def lookup_in_memory(self, rel: str, key: str) -> tuple[Any, bool] | None:
        """lookup() for the event loop: only files already parsed, no disk at all; None when it cannot say
        (a file not parsed yet, or a miss: lookup() then reads, or takes in other servers' saves)."""
        main, simulated = self.main.entries.get(rel), self.simulated.entries.get(rel)
        if (main is None and rel in self.main.files) or (simulated is None and rel in self.simulated.files):
            return None
        if main is not None and key in main:
            return main[key], bool(simulated) and key in simulated
        if simulated is not None and key in simulated:
            return simulated[key], True
        return None

    def examples(self, api: ApiKey, limit: int = 5) -> list[tuple[str, Any]]:
        """Real (non-simulated) entries of an API, in file order: few-shot material for the LLM simulators."""
        rel = api.relative_path()
        main = self.main.known(rel)
        if not main:
            return []
        simulated = self.simulated.known(rel) or {}
        real = [(k, v) for k, v in list(main.items()) if k not in simulated]
        return real[:limit]

    def store_simulated(self, api: ApiKey, key: str, answer: Any) -> bool:
        """Keep a simulated answer; False when it was not written (no saving, or the disk refused: then it is
        logged in one line, counted in ``save_failures``, and served from memory)."""
        rel = api.relative_path()
        try:
            # the mark first: a crash between the two writes must never leave an unmarked simulated entry
            marked = self.simulated.put(rel, key, answer, self.save)
        except OSError as exc:
            marked = False
            self._save_failed(exc)
        if not self.simulated_into_main:
            return marked
        try:  # unmarked on disk never: without the mark, memory only (the next write of this file saves it)
            return self.main.put(rel, key, answer, self.save and marked) and marked
        except OSError as exc:
            self._save_failed(exc)
            return False

    def store_real(self, api: ApiKey, key: str, answer: Any) -> bool:
        try:
            return self.main.put(api.relative_path(), key, answer, self.save)
        except OSError as exc:
            self._save_failed(exc)
            return False

    def _save_failed(self, exc: OSError) -> None:
        self.save_failures += 1
        self.last_save_error = " ".join(str(exc).split())
        if self.save_failures == 1 or self.save_failures % 100 == 0:  # one line, not a traceback per request
            log.warning("could not save an answer to the cache (%d so far; answered, kept in memory, files on "
                        "disk unchanged): %s", self.save_failures, self.last_save_error)
