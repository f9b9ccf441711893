"""The progress bar's counts, kept as outcomes arrive (not recounted: O(n) per query)."""

from __future__ import annotations

from collections import Counter
from typing import Any


class ProgressTally:
    """The progress bar's counts, updated one outcome at a time."""

    def __init__(self) -> None:
        self.finished = self.answered = 0
        self.failures: Counter = Counter()

    def add(self, outcome: Any) -> None:
        self.finished += outcome.finished
        self.answered += outcome.answered
        if outcome.failure is not None:
            self.failures[outcome.failure.kind] += 1

    def text(self) -> str:
        """finished=5 answered=4 infra=2 (tool_server 2): the bar names every infrastructure failure as it happens."""
        text = f"finished={self.finished} answered={self.answered} infra={sum(self.failures.values())}"
        if self.failures:
            text += " (" + ", ".join(f"{kind} {n}" for kind, n in sorted(self.failures.items())) + ")"
        return text


def progress_postfix(outcomes: list) -> str:
    tally = ProgressTally()
    for outcome in outcomes:
        tally.add(outcome)
    return tally.text()
