"""An outside agent's process for one query: its command line (split as a shell would, never run through one) in
a process group of its own (a Ctrl-C at the terminal reaches the run, not the agents: the run decides when they
stop), its output kept as a bounded tail, stopped when its time is up or its query's session has ended."""

from __future__ import annotations

import atexit
import collections
import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

TAIL_BYTES = 4000  # of stderr (and stdout) kept for the record: an agent's output is never held whole
GRACE_S = 5.0  # after its session ends (Finish called, or a call refused at the cap: the agent got a reply saying
# so), the agent has this long to exit on its own
KILL_WAIT_S = 3.0  # after SIGTERM, this long before SIGKILL
POLL_S = 0.05

_LIVE: set[subprocess.Popen] = set()  # agents running now: stopped at exit (a second Ctrl-C leaves them behind)
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class AgentEnd:
    exit_status: int | None  # the process's own exit status (None: it could not be started)
    stopped: str | None  # why the run stopped it: "timeout", "session_ended", "run_stopped"; None: it exited
    stderr_tail: str
    stdout_tail: str
    seconds: float
    start_error: str | None = None  # the OSError that kept it from starting


def run_agent(argv: list[str], env: dict[str, str], timeout_s: float, session_done: threading.Event,
              grace_s: Callable[[], float], stopping: Callable[[], bool] | None = None) -> AgentEnd:
    """Run one agent to its end. ``session_done``: set when its session takes no more calls; ``grace_s()`` then says
    how long it may still take to exit (0: stop it now)."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return AgentEnd(None, None, "", "", time.monotonic() - started, start_error=f"{type(exc).__name__}: {exc}")
    with _LIVE_LOCK:
        _LIVE.add(process)
    tails = [_Tail(process.stdout), _Tail(process.stderr)]
    stopped = None
    deadline = started + timeout_s
    ended_at: float | None = None
    try:
        while process.poll() is None:
            now = time.monotonic()
            if now >= deadline:
                stopped = "timeout"
            elif session_done.is_set():
                ended_at = ended_at if ended_at is not None else now
                if now - ended_at >= grace_s():
                    stopped = "session_ended"
            elif stopping is not None and stopping():
                stopped = "run_stopped"
            if stopped:
                _stop(process)
                break
            time.sleep(POLL_S)
    finally:
        with contextlib.suppress(OSError):
            process.wait(timeout=KILL_WAIT_S * 2)
        with _LIVE_LOCK:
            _LIVE.discard(process)
        for tail in tails:
            tail.join()
    return AgentEnd(process.returncode, stopped, tails[1].text(), tails[0].text(), time.monotonic() - started)


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the agent's process group, SIGKILL after KILL_WAIT_S: its children go with it."""
    for sig, wait in ((signal.SIGTERM, KILL_WAIT_S), (signal.SIGKILL, KILL_WAIT_S)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@atexit.register
def _stop_all() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for process in live:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)


class _Tail:
    """Reads a pipe to its end in a thread, keeping the last TAIL_BYTES."""

    def __init__(self, pipe) -> None:
        self.chunks: collections.deque[bytes] = collections.deque()
        self.size = 0
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe) -> None:
        with contextlib.suppress(OSError, ValueError):
            for chunk in iter(lambda: pipe.read1(8192), b""):
                self.chunks.append(chunk)
                self.size += len(chunk)
                while self.size - len(self.chunks[0]) >= TAIL_BYTES:
                    self.size -= len(self.chunks.popleft())
        with contextlib.suppress(OSError):
            pipe.close()

    def join(self) -> None:
        self.thread.join(timeout=KILL_WAIT_S)

    def text(self) -> str:
        return b"".join(self.chunks)[-TAIL_BYTES:].decode("utf-8", "replace")
