"""Judge labels: Solved / Unsure / Unsolved as upstream stores them (``AnswerStatus.Solved``), plus our error label."""

from __future__ import annotations

from enum import StrEnum

from ..protocol.evaluation import ANSWER_STATUS_PREFIX, SOLVED, UNSOLVED, UNSURE

JUDGE_ERROR = "JudgeError"  # ours: the judge failed after its retries; upstream would have crashed


class Label(StrEnum):
    SOLVED = SOLVED
    UNSURE = UNSURE
    UNSOLVED = UNSOLVED
    ERROR = JUDGE_ERROR

    def stored(self) -> str:
        """The string written into label files (upstream's ``str(AnswerStatus.X)``)."""
        return self.value if self is Label.ERROR else ANSWER_STATUS_PREFIX + self.value

    @property
    def points(self) -> float:
        """Upstream pass-rate value: Solved 1, Unsure 0.5, anything else 0 (errors too)."""
        return POINTS.get(self, 0.0)

    @classmethod
    def parse(cls, text: str) -> Label:
        """Read a stored label; anything that is not a known status is an error label."""
        name = text[len(ANSWER_STATUS_PREFIX):] if text.startswith(ANSWER_STATUS_PREFIX) else text
        for label in cls:
            if label.value == name:
                return label
        return cls.ERROR


POINTS = {Label.SOLVED: 1.0, Label.UNSURE: 0.5}
