"""Ctrl-C during a run. The first stops starting queries and lets the ones in flight finish (their files whole),
and says so on stderr; the second raises StopNow at once: the queries in flight then end unfinished (no answer
file, so rerunning the same command redoes them).

The first press only sets a flag, so no exception lands in the middle of the runner's bookkeeping; the runner
raises KeyboardInterrupt itself once the queries in flight have ended. Outside the main thread no handler is
installed (Python delivers Ctrl-C to the main thread only).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable


class StopNow(KeyboardInterrupt):
    """A second Ctrl-C: the run stops at once. ``in_flight``: the queries left unfinished ("group/query_id"),
    set by the runner once it has recorded them."""

    in_flight: list[str] = []


def queries(count: int) -> str:
    """``1 query``, ``2 queries``: a count as a message says it."""
    return f"{count} {'query' if count == 1 else 'queries'}"


def speaker(command: str | None) -> str:
    """Who speaks in a run's messages: the command that started it (``tba eval`` runs one too), from its line."""
    words = (command or "").split()
    return " ".join(words[:2]) if len(words) >= 2 and words[0] == "tba" else "tba run"


def notice(in_flight: int, who: str = "tba run") -> str:
    those = "it is" if in_flight == 1 else f"those {in_flight} are"
    return (f"{who}: Ctrl-C: starting no more queries; waiting for the {queries(in_flight)} in flight to finish so "
            f"their files are whole. Press Ctrl-C again to stop now ({those} then not finished: rerunning the same "
            "command redoes them).\n")


def announce(in_flight: int, who: str = "tba run") -> None:
    """What the first Ctrl-C waits for. A raw write: a print could land inside a write the handler interrupted."""
    with contextlib.suppress(OSError):
        os.write(2, notice(in_flight, who).encode())


class CtrlC:
    """``with CtrlC(in_flight, on_first) as ctrl_c:`` the first Ctrl-C calls ``on_first`` (stop starting
    queries) and announces ``in_flight()`` queries; ``ctrl_c.pressed`` tells the runner afterwards. The second
    raises StopNow wherever the main thread is."""

    def __init__(self, in_flight: Callable[[], int], on_first: Callable[[], None], who: str = "tba run"):
        self.in_flight = in_flight
        self.on_first = on_first
        self.who = who  # the command named in the notice (tba eval runs a run too)
        self.pressed = False
        self._previous = None

    def __enter__(self) -> CtrlC:
        with contextlib.suppress(ValueError):  # not the main thread: Ctrl-C never reaches this one
            self._previous = signal.signal(signal.SIGINT, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        if self._previous is not None:
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGINT, self._previous)

    def _handle(self, signum, frame) -> None:
        if self.pressed:
            raise StopNow()
        self.pressed = True
        self.on_first()
        announce(self.in_flight(), self.who)
