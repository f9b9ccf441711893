"""A reproduced leaderboard: the six groups, the Average and the I1 / I2 / I3 aggregates, per scoring mode.

Average = plain mean of the six group means (± plain mean of the stds), as StableToolBench's README computes
it; I1 = mean of the three G1 groups, I2 of the two G2 groups, I3 = G3_instruction. An aggregate over fewer
groups than it names is marked ``*`` and says over how many. Strict cells say "n of N test ids" next to them,
so a figure over part of a test set never passes for the whole. A cell over zero queries (nothing judged, an
empty test set, no verdict) has no score: it prints ``–``, a footnote says why, and no aggregate counts it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from toolbench_adapter.evaluation.scoring.results import ScoreRow
from toolbench_adapter.evaluation.scoring.scores import STRICT, UPSTREAM, Score, average
from toolbench_adapter.queryset.queries import GROUP_LABELS

GROUP_COLUMNS = list(GROUP_LABELS)  # README SoPR order: I1 Inst, I1 Cat, I1 Tool, I2 Cat, I2 Inst, I3 Inst
AVERAGE = "Average"
AGGREGATES = {
    AVERAGE: tuple(GROUP_COLUMNS),
    "I1": ("G1_instruction", "G1_category", "G1_tool"),
    "I2": ("G2_category", "G2_instruction"),
    "I3": ("G3_instruction",),
}
MISSING = "–"


def is_scored(score: Score | None) -> bool:
    """A score has a denominator: 0 of 0 is no score (printing 0.0 would say the model failed them)."""
    return score is not None and score.n > 0


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


def no_score_reason(score: Score) -> str:
    """Why a cell over zero queries has no score, in the words of its denominator."""
    if score.metric == "SoPR" and score.errors:
        return f"no verdict, {plural(score.errors, 'judgement')} failed"
    if score.metric == "SoPR" and score.mode == UPSTREAM:
        return "0 queries judged"
    if score.mode == STRICT:
        return "0 test ids"
    return "0 ids compared" if score.metric == "SoWR" else "0 ids"


@dataclass
class Aggregate:
    score: Score | None
    present: int
    wanted: int

    @property
    def complete(self) -> bool:
        return self.score is not None and self.present == self.wanted


@dataclass
class BoardLine:
    name: str
    model: str
    reference: str | None = None
    cells: dict[str, Score] = field(default_factory=dict)  # group -> score

    def aggregate(self, column: str) -> Aggregate:
        members = AGGREGATES[column]
        present = [self.cells[g] for g in members if is_scored(self.cells.get(g))]
        return Aggregate(average(present) if present else None, len(present), len(members))

    def value(self, column: str) -> Score | None:
        """The cell's score (None over zero queries); an aggregate only when every group it names is scored."""
        if column in GROUP_LABELS:
            score = self.cells.get(column)
            return score if is_scored(score) else None
        agg = self.aggregate(column)
        return agg.score if agg.complete else None


@dataclass
class Board:
    metric: str
    mode: str
    note: str
    lines: list[BoardLine]

    @property
    def title(self) -> str:
        return f"{self.metric}, {self.mode}"


def build_boards(rows: list[ScoreRow]) -> list[Board]:
    boards: dict[tuple[str, str], Board] = {}
    for row in rows:
        key = (row.score.metric, row.score.mode)
        board = boards.setdefault(key, Board(row.score.metric, row.score.mode, row.score.note, []))
        name = f"{row.model} vs {row.reference}" if row.reference else row.model
        line = next((entry for entry in board.lines if entry.name == name), None)
        if line is None:
            line = BoardLine(name, row.model, row.reference)
            board.lines.append(line)
        line.cells[row.group] = row.score
    return list(boards.values())


def coverage(score: Score) -> str:
    """``n of N test ids`` for a strict score (N = the test set, n = the ids that have an answer)."""
    return f"{score.n - score.missing} of {score.n} test ids"


def cell_text(board: Board, score: Score | None, *, partial: str = "") -> str:
    if not is_scored(score):
        return MISSING
    text = score.text(with_std=board.metric == "SoPR") + partial
    return f"{text} ({coverage(score)})" if board.mode == STRICT else text


def header() -> list[str]:
    return ["Model"] + [GROUP_LABELS[g] for g in GROUP_COLUMNS] + list(AGGREGATES)


def body(board: Board) -> list[list[str]]:
    out = []
    for line in board.lines:
        cells = [cell_text(board, line.cells.get(g)) for g in GROUP_COLUMNS]
        for column in AGGREGATES:
            agg = line.aggregate(column)
            cells.append(cell_text(board, agg.score, partial="" if agg.complete else "*"))
        out.append([line.name] + cells)
    return out


def footnotes(board: Board) -> list[str]:
    notes = []
    for line in board.lines:
        partial = [f"{column} over {agg.present} of {agg.wanted} groups" for column in AGGREGATES
                   if (agg := line.aggregate(column)).score is not None and not agg.complete]
        if partial:
            notes.append(f"* {line.name}: " + ", ".join(partial))
        unscored = [f"{GROUP_LABELS[g]} ({no_score_reason(s)})" for g in GROUP_COLUMNS
                    if (s := line.cells.get(g)) is not None and not is_scored(s)]
        if unscored:
            notes.append(f"{MISSING} {line.name}: no score in " + "; ".join(unscored))
    return notes


def to_markdown(board: Board) -> str:
    head = header()
    lines = [f"{board.title}: {board.note}", "", "| " + " | ".join(head) + " |",
             "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in body(board)]
    notes = footnotes(board)
    if notes:
        lines += [""] + notes
    return "\n".join(lines) + "\n"
