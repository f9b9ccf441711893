"""One writer per run folder: ``tba run``, the parser fan-out and ``tba merge`` hold a lock on each run folder
they write (merge: on its shards too), so two commands with the same --name cannot both run every query.

The lock is ``fcntl.flock`` on ``.NAME.tba-lock`` beside the folder (in its parent: the folder need not exist
yet, and a merge can still rename its finished folder into place). The kernel releases a flock when its
process ends, however it ends, so a lock left by a killed command (kill -9, a lost node) is taken over by the
next one. The file holds the holder's pid, host, start time and command, so a refused command names it.

The lock file can be deleted by hand while its holder runs (its flock then holds a file no other command opens),
so the holder also flocks the run folder itself (``hold_folder``: made for it when missing, removed again at
release if nothing was written in it): a second command that finds the lock file gone and takes a new one is
still refused by the folder's lock.

Where the filesystem offers no flock (Lustre mounted without ``-o flock``), the file alone is the lock: a
holder recorded on this host whose pid is gone is taken over; one on another host is refused with the file to
delete once that command is known to be gone.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shlex
import socket
import sys
import time
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import output_path_error

LOCK_SUFFIX = ".tba-lock"
# flock is missing on this filesystem: fall back to the recorded holder
_NO_FLOCK = {errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOLCK, errno.EINVAL}
_TRIES = 20  # flock attempts 50 ms apart before a command is refused (a probe holds it for a moment)


class FolderBusy(InputError):
    """The run folder is held by another live command (exit 2)."""

    def __init__(self, problem: str, *, path: Path, fix: str, holder: dict | None):
        super().__init__(problem, path=path, fix=fix)
        self.holder = holder


def lock_path(folder: str | Path) -> Path:
    """The lock file of a run folder: one per folder, whatever path names it (symlinks resolved)."""
    folder = Path(folder).resolve()
    return folder.parent / f".{folder.name}{LOCK_SUFFIX}"


def describe(holder: dict | None) -> str:
    """pid 4242 on node1 since 2026-01-02T03:04:05Z: tba run --name x ..."""
    if not holder:
        return "another process (it has not written its details yet)"
    return (f"pid {holder.get('pid')} on {holder.get('host')} since {holder.get('started')}: "
            f"{holder.get('command') or '(command not recorded)'}")


def _iso_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _read(fd: int) -> dict | None:
    try:
        data = os.pread(fd, 1 << 16, 0)
        holder = json.loads(data) if data.strip() else None
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) else None


def pid_alive(pid: object) -> bool:
    """Whether a process with this id lives on this host (a pid that is not a positive int: no)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class RunFolderLock:
    """``with RunFolderLock(run_dir, command):`` the folder is this command's until the block ends.

    A live holder: FolderBusy (exit 2) naming it. A holder that ended without releasing (killed): taken over,
    said on stderr, ``taken_over`` set to its details."""

    def __init__(self, folder: str | Path, command: str | None = None, *, fix: str | None = None,
                 hold_folder: bool = False, what: str = "run folder"):
        self.folder = Path(folder)
        self.what = what  # the folder as messages name it (a sweep's folder holds its cells' run folders)
        self.hold_folder = hold_folder  # make the folder if missing, so its own flock holds from the start
        self.path = lock_path(self.folder)
        self.command = command or shlex.join(sys.argv)  # a library caller: the process's own command line
        self.fix = fix or ("wait for that command to end (or stop it: a rerun of the same command goes on where it "
                           "stopped), or choose another --name")
        self.taken_over: dict | None = None
        self._fd: int | None = None
        self._folder_fd: int | None = None
        self._made_folder = False

    def __enter__(self) -> RunFolderLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _mine(self) -> dict:
        return {"pid": os.getpid(), "host": socket.gethostname(), "started": _iso_now(), "command": self.command}

    def acquire(self) -> None:
        while True:
            try:  # a file in the way of a folder, a read-only place: exit 2 naming it (fileio's words)
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
            except OSError as exc:
                raise output_path_error(self.path, exc) from None
            try:
                self._flock(fd)
            except OSError as exc:
                if exc.errno not in _NO_FLOCK:
                    os.close(fd)
                    raise
                self._acquire_without_flock(fd)
                return
            if not self._still_at_path(fd):  # its holder removed it while we waited: lock the file there now
                os.close(fd)
                continue
            self._take(fd, self._mine())
            self._lock_folder()
            return

    def _lock_folder(self) -> None:
        """The folder's own flock, held beside the lock file's: a command whose lock file was deleted still
        holds it. A folder that is not there (and not ``hold_folder``) or a filesystem without flock: the file
        alone."""
        if self.hold_folder and not self.folder.exists():
            with contextlib.suppress(OSError):
                self.folder.mkdir(parents=True)
                self._made_folder = True
        try:
            folder_fd = os.open(self.folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return
        for _ in range(_TRIES):
            try:
                fcntl.flock(folder_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._folder_fd = folder_fd
                return
            except BlockingIOError:
                time.sleep(0.05)
            except OSError:
                os.close(folder_fd)
                return
        os.close(folder_fd)
        self.release()
        raise FolderBusy(f"another command is writing this {self.what} (it holds the folder's own lock; its lock file "
                         f"{self.path} was deleted while it ran, so its details are gone)", path=self.folder,
                         fix=self.fix, holder=None)

    def _flock(self, fd: int) -> None:
        """Lock, or raise FolderBusy naming the holder. A few tries first: live_holder() probes for a moment."""
        for _ in range(_TRIES):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                time.sleep(0.05)
        holder = _read(fd)
        os.close(fd)
        raise FolderBusy(f"another command is writing this {self.what}: {describe(holder)}", path=self.folder,
                         fix=self.fix, holder=holder)

    def _still_at_path(self, fd: int) -> bool:
        try:
            at_path = os.stat(self.path)
        except FileNotFoundError:
            return False
        mine = os.fstat(fd)
        return (mine.st_dev, mine.st_ino) == (at_path.st_dev, at_path.st_ino)

    def _take(self, fd: int, mine: dict) -> None:
        """Ours now: a file that still names a holder was left by one that ended without releasing (killed)."""
        stale = _read(fd)
        if stale:
            self.taken_over = stale
            print(f"tba: {self.folder}: taking over the lock of {describe(stale)}; that command ended without "
                  "releasing it (killed?), so its session stays recorded as interrupted", file=sys.stderr)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(mine).encode(), 0)
        self._fd = fd

    def _acquire_without_flock(self, fd: int) -> None:
        holder = _read(fd)
        if holder and holder.get("host") != socket.gethostname():
            os.close(fd)
            raise FolderBusy(f"another command may be writing this {self.what}: {describe(holder)} (this "
                             "filesystem has no flock, so a command on another host cannot be checked)",
                             path=self.folder, holder=holder, fix=f"{self.fix}; once that command is gone, "
                             f"delete {self.path}")
        if holder and pid_alive(holder.get("pid")):
            os.close(fd)
            raise FolderBusy(f"another command is writing this {self.what}: {describe(holder)}", path=self.folder,
                             fix=self.fix, holder=holder)
        mine = self._mine()
        self._take(fd, mine)
        time.sleep(0.1)  # two commands that both found it free: the last writer keeps it, the other refuses
        holder = _read(fd)
        if holder != mine:
            self._fd = None
            os.close(fd)
            raise FolderBusy(f"another command is writing this {self.what}: {describe(holder)}", path=self.folder,
                             fix=self.fix, holder=holder)

    def release(self) -> None:
        fd, self._fd = self._fd, None
        folder_fd, self._folder_fd = self._folder_fd, None
        if folder_fd is not None:
            if self._made_folder:  # made for the lock and nothing written in it: as if never made
                with contextlib.suppress(OSError):
                    os.rmdir(self.folder)
            os.close(folder_fd)
        if fd is None:
            return
        if self._still_at_path(fd):  # not another command's file, made after ours was deleted
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # while still locked: a waiter that opened it sees it gone and retries
        os.close(fd)  # releases the flock


def live_holder(folder: str | Path) -> dict | None:
    """Who holds the run folder's lock now (None: nobody; a lock left by a killed command is nobody's). For
    commands that read a run folder and must tell a run in progress from an interrupted one."""
    path = lock_path(folder)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return {} if _folder_held(folder) else None  # the lock file deleted by hand while its holder runs
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or {}
        except OSError:  # no flock here: the recorded holder, if it is alive on this host
            holder = _read(fd)
            alive = holder and (holder.get("host") != socket.gethostname() or pid_alive(holder.get("pid")))
            return holder if alive else None
        return None if not _folder_held(folder) else {}
    finally:
        os.close(fd)


def _folder_held(folder: str | Path) -> bool:
    """Whether a command holds the folder's own lock (its lock file may have been deleted)."""
    try:
        fd = os.open(Path(folder), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
