"""Leaderboard tables in the StableToolBench README layout: Markdown, CSV, LaTeX and a bar chart.

Rows are model + method, columns I1 Inst, I1 Cat, I1 Tool, I2 Cat, I2 Inst, I3 Inst, Average; each cell is
``mean±std`` with one decimal (SoWR and FAC cells are a single number). Average = plain mean of the group means
± plain mean of the group stds, as the README computes it. One board per (metric, scoring mode), captioned
with the judge and the mode, so no number is unlabelled.
"""

from __future__ import annotations

import csv
import io
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from ..evaluation.results import ScoreRow
from ..evaluation.scores import Score, average
from ..evaluation.storage import write_text_atomic
from ..queries import GROUP_LABELS

COLUMNS = list(GROUP_LABELS)  # README SoPR order: I1 Inst, I1 Cat, I1 Tool, I2 Cat, I2 Inst, I3 Inst
AVERAGE = "Average"
MISSING = "–"
SCORED_ANYWAY = "†"  # a row scored although its run holds infrastructure failures (tba evaluate --score-anyway)


@dataclass
class BoardRow:
    name: str
    cells: dict[str, Score] = field(default_factory=dict)

    @property
    def average(self) -> Score | None:
        present = [self.cells[g] for g in COLUMNS if g in self.cells]
        return average(present) if present else None

    @property
    def complete(self) -> bool:
        return all(g in self.cells for g in COLUMNS)


@dataclass
class Leaderboard:
    metric: str
    mode: str
    note: str
    judges: list[str]
    rows: list[BoardRow]
    marks: list[str] = field(default_factory=list)  # footnotes of marked rows (SCORED_ANYWAY)

    @property
    def with_std(self) -> bool:
        return self.metric == "SoPR"

    @property
    def title(self) -> str:
        return f"{self.metric} ({self.mode})"

    @property
    def caption(self) -> str:
        judge = ", ".join(self.judges) if self.judges else "not recorded"
        return f"{self.title}: {self.note}. Judge: {judge}."

    def cell(self, score: Score | None) -> str:
        return score.text(self.with_std) if score is not None else MISSING

    def header(self) -> list[str]:
        return ["Method"] + [GROUP_LABELS[g] for g in COLUMNS] + [AVERAGE]

    def body(self) -> list[list[str]]:
        lines = []
        for row in self.rows:
            avg = self.cell(row.average) + ("" if row.complete or row.average is None else "*")
            lines.append([row.name] + [self.cell(row.cells.get(g)) for g in COLUMNS] + [avg])
        return lines

    @property
    def footnote(self) -> str | None:
        notes = [] if all(row.complete for row in self.rows) else ["* average over the groups present only"]
        notes += self.marks
        return "\n".join(notes) or None


def row_name(row: ScoreRow) -> str:
    name = row.model if not row.method else f"{row.model} ({row.method})"
    return f"{name} vs {row.reference}" if row.reference else name


def build_leaderboards(rows: list[ScoreRow], scored_anyway: dict[str, str] | None = None) -> list[Leaderboard]:
    """``scored_anyway``: model -> why its rows are marked (a run scored with infrastructure failures): the
    row name gets SCORED_ANYWAY and the board a footnote saying why."""
    scored_anyway = scored_anyway or {}
    boards: OrderedDict[tuple[str, str], Leaderboard] = OrderedDict()
    for row in rows:
        key = (row.score.metric, row.score.mode)
        board = boards.get(key)
        if board is None:
            board = boards[key] = Leaderboard(row.score.metric, row.score.mode, row.score.note, [], [])
        if row.judge and row.judge not in board.judges:
            board.judges.append(row.judge)
        name = row_name(row)
        if row.model in scored_anyway:
            name = f"{name} {SCORED_ANYWAY}"
            mark = f"{SCORED_ANYWAY} {row_name(row)}: {scored_anyway[row.model]}"
            if mark not in board.marks:
                board.marks.append(mark)
        target = next((r for r in board.rows if r.name == name), None)
        if target is None:
            target = BoardRow(name)
            board.rows.append(target)
        target.cells[row.group] = row.score  # a later file for the same cell wins
    return list(boards.values())


def to_markdown(board: Leaderboard) -> str:
    header = board.header()
    lines = [f"**{board.caption}**", "", "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in board.body()]
    if board.footnote:
        lines += ["", board.footnote]
    return "\n".join(lines) + "\n"


def to_csv(board: Leaderboard) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(board.header() + ["metric", "mode", "judge"])
    judge = "; ".join(board.judges)
    for cells in board.body():
        writer.writerow(cells + [board.metric, board.mode, judge])
    return buffer.getvalue()


def _latex_escape(text: str) -> str:
    for char, repl in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("_", r"\_"), ("#", r"\#"),
                       ("$", r"\$"), ("{", r"\{"), ("}", r"\}")):
        text = text.replace(char, repl)
    return text.replace("±", r"$\pm$").replace("–", "--").replace(SCORED_ANYWAY, r"$\dagger$")


def to_latex(board: Leaderboard) -> str:
    header = board.header()
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "c" * (len(header) - 1) + "}",
             r"\toprule", " & ".join(_latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_escape(c) for c in cells) + r" \\" for cells in board.body()]
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + _latex_escape(board.caption) + "}",
              r"\end{table}"]
    return "\n".join(lines) + "\n"


def plot_png(board: Leaderboard, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [GROUP_LABELS[g] for g in COLUMNS] + [AVERAGE]
    width = 0.8 / max(len(board.rows), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(labels)), 3.6))
    for index, row in enumerate(board.rows):
        scores = [row.cells.get(g) for g in COLUMNS] + [row.average]
        xs = [i + (index - (len(board.rows) - 1) / 2) * width for i in range(len(labels))]
        means = [s.mean if s else 0.0 for s in scores]
        errors = [s.std if s and board.with_std else 0.0 for s in scores]
        ax.bar(xs, means, width, yerr=errors, capsize=2, label=row.name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_ylabel(f"{board.metric} (%)")
    ax.set_ylim(0, 100)
    ax.set_title(board.caption, fontsize=8, wrap=True)
    ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return path


def write_leaderboard(board: Leaderboard, out_dir: str | Path, png: bool = True) -> list[Path]:
    out_dir = Path(out_dir)
    stem = f"leaderboard_{board.metric}_{board.mode}".lower()
    written = []
    for suffix, render in ((".md", to_markdown), (".csv", to_csv), (".tex", to_latex)):
        path = out_dir / (stem + suffix)
        write_text_atomic(path, render(board))
        written.append(path)
    if png:
        written.append(plot_png(board, out_dir / (stem + ".png")))
    return written
