"""Leaderboard tables in the StableToolBench README layout: Markdown, CSV, LaTeX and a bar chart.

Rows are model + method, columns I1 Inst, I1 Cat, I1 Tool, I2 Cat, I2 Inst, I3 Inst, Average; each cell is
``mean±std`` with one decimal (SoWR and FAC cells are a single number). Average = plain mean of the group means
± plain mean of the group stds, as the README computes it. One board per (metric, scoring mode), captioned
with the judge and the mode, so no number is unlabelled; and no number is without its denominator: the
footnotes give each row's n per cell and how many cells its Average averages, and a cell over zero queries
(0 of 0: nothing judged, no verdict, an empty test set) prints no number: ``–`` (CSV: empty, LaTeX: ``--``)
with the reason in a footnote. Under the strict denominator a group whose test ids went unanswered is a score
(0 of N: the model failed them), not a gap.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.evaluation.scoring.aggregates import is_scored, no_score_reason, plural
from toolbench_adapter.evaluation.scoring.counts import Counts
from toolbench_adapter.evaluation.scoring.results import ScoreRow
from toolbench_adapter.evaluation.scoring.scores import STRICT, UPSTREAM, Score, average
from toolbench_adapter.queryset.queries import GROUP_LABELS

from ..evaluation.comparability import NOT_RECORDED
from ..evaluation.evaluations import SELF_JUDGED, is_self_judged_label
from ..evaluation.storage import write_text_atomic
from ..runs.cost import COST_COLUMNS, Cost
from ..structured.describe import caption_notes
from . import trial_tables
from .trial_tables import RowTrials

COLUMNS = list(GROUP_LABELS)  # README SoPR order: I1 Inst, I1 Cat, I1 Tool, I2 Cat, I2 Inst, I3 Inst
AVERAGE = "Average"
MISSING = "–"
# a row scored although its run holds infrastructure failures or judgements failed (--score-anyway), with a footnote
SCORED_ANYWAY = "†"


@dataclass
class BoardRow:
    name: str
    cells: dict[str, Score] = field(default_factory=dict)
    model: str = ""
    counts: dict[str, Counts] | None = None  # group -> the run's query counts (evaluation/scoring/counts.py), where known

    @property
    def scored(self) -> list[str]:
        """The groups whose cell has a score (a denominator above zero), in column order."""
        return [g for g in COLUMNS if is_scored(self.cells.get(g))]

    @property
    def average(self) -> Score | None:
        present = [self.cells[g] for g in self.scored]
        return average(present) if present else None

    @property
    def complete(self) -> bool:
        return len(self.scored) == len(COLUMNS)


@dataclass
class Leaderboard:
    metric: str
    mode: str
    note: str
    judges: list[str]
    rows: list[BoardRow]
    marks: list[str] = field(default_factory=list)  # footnotes of marked rows (SCORED_ANYWAY)
    # row name -> "comparable with the StableToolBench leaderboard: yes" / "not comparable ...: reasons"
    comparability: dict[str, str] = field(default_factory=dict)
    # row name -> its judge's audit: "judge X: kappa ..." or "judge X not audited: run `tba judge-audit ...`"
    # (evaluation/audit/cards.py); rows of score or label files have none
    judge_cards: dict[str, str] = field(default_factory=dict)
    # row name -> its figures over trials (a set of trials, issue 42: trial_tables.py); none: the board as before
    trials: dict[str, RowTrials] = field(default_factory=dict)
    # row name -> what its run cost and how fast its model answered (runs/cost.py): columns after the others in the
    # CSV only (rows of score or label files have none; a board without any renders as before)
    costs: dict[str, Cost] = field(default_factory=dict)

    def comparability_of(self, row: BoardRow) -> str:
        return self.comparability.get(row.name, NOT_RECORDED)

    def judge_card_of(self, row: BoardRow) -> str:
        return self.judge_cards.get(row.name, "")

    @property
    def comparability_lines(self) -> list[str]:
        """One line when every row stands alike (the usual single run), else one per row, named."""
        return _row_lines(self.rows, [self.comparability_of(row) for row in self.rows]) or [NOT_RECORDED]

    @property
    def judge_card_lines(self) -> list[str]:
        """The judges' audit lines, as comparability_lines (none for rows without an evaluation)."""
        return [text for text in _row_lines(self.rows, [self.judge_card_of(row) for row in self.rows]) if text]

    @property
    def with_std(self) -> bool:
        return self.metric == "SoPR"

    @property
    def title(self) -> str:
        return f"{self.metric} ({self.mode})"

    @property
    def caption(self) -> str:
        judge = ", ".join(self.judges) if self.judges else "not recorded"
        # a run with --constrain / --on-invalid (its row name's suffix) is said to be no upstream setting
        structured = "".join(f"; {note}" for note in caption_notes(r.name for r in self.rows))
        return f"{self.title}: {self.note}. Judge: {judge}{structured}."

    def cell(self, score: Score | None) -> str:
        return score.text(self.with_std) if is_scored(score) else MISSING

    def header(self) -> list[str]:
        return ["Method"] + [GROUP_LABELS[g] for g in COLUMNS] + [AVERAGE]

    def body(self) -> list[list[str]]:
        lines = []
        for row in self.rows:
            figures = self.trials.get(row.name)
            if figures is not None:  # a set of trials: SoPR over trials [95% CI] in every cell
                cells = [figures.cell(g) if is_scored(row.cells.get(g)) else MISSING for g in COLUMNS]
                average = figures.average.text() if figures.average is not None else MISSING
            else:
                cells = [self.cell(row.cells.get(g)) for g in COLUMNS]
                average = self.cell(row.average)
            avg = average + ("" if row.complete or row.average is None else "*")
            lines.append([row.name] + cells + [avg])
        return lines

    @property
    def footnote(self) -> str | None:
        return "\n".join(self.footnotes()) or None

    def footnotes(self) -> list[str]:
        """Per row: its n per cell (and the run's answered count where known), its cells without a score and
        why, how many cells its Average averages; then the marks (†)."""
        notes = []
        for row in self.rows:
            notes.append(f"{row.name}: n = {self.denominators(row)}")
            # a cell over zero queries, and a group the run has queries in but no pass rate for (nothing judged)
            ran = set(row.counts or {}) if self.metric == "SoPR" else set()
            unscored = [f"{GROUP_LABELS[g]} ({self.no_score(row, g)})" for g in COLUMNS
                        if (g in row.cells or g in ran) and not is_scored(row.cells.get(g))]
            if unscored:
                notes.append(f"{MISSING} {row.name}: no score in {'; '.join(unscored)}")
        if all(row.complete for row in self.rows):
            notes.append(f"{AVERAGE} = mean of the {len(COLUMNS)} group cells.")
        else:
            notes += [f"{'*' if row.average is not None else MISSING} {row.name}: {AVERAGE} over "
                      f"{len(row.scored)} of {len(COLUMNS)} groups" + ("" if row.scored else ": no score")
                      for row in self.rows if not row.complete]
        return notes + self.marks

    def denominators(self, row: BoardRow) -> str:
        """``I1 Inst 12, I1 Cat 0, …`` in the board's unit: judged queries, test ids with an answer, ids."""
        if self.mode == STRICT:
            cells = [f"{GROUP_LABELS[g]} {s.n - s.missing} of {s.n}" for g in COLUMNS if (s := row.cells.get(g))]
            unit = "test ids with an answer (the rest count Unsolved)"
        else:
            cells = [f"{GROUP_LABELS[g]} {s.n}" for g in COLUMNS if (s := row.cells.get(g))]
            unit = "queries judged" if self.metric == "SoPR" and self.mode == UPSTREAM else "ids"
        text = f"{', '.join(cells)} {unit}"
        if self.metric == "SoPR" and row.counts:
            queries = sum(c.queries for c in row.counts.values())
            answered = sum(c.answered for c in row.counts.values())
            text += (f"; {answered} answered of {plural(queries, 'query', 'queries')} (a final "
                     "give_answer; one without is judged Unsolved)")
        return text

    def no_score(self, row: BoardRow, group: str) -> str:
        reason = no_score_reason(row.cells[group]) if group in row.cells else "nothing judged"
        counts = (row.counts or {}).get(group)
        if self.metric == "SoPR" and counts is not None:
            reason += f", {counts.answered} answered of {plural(counts.queries, 'query', 'queries')}"
        return reason


def row_name(row: ScoreRow) -> str:
    name = row.model if not row.method else f"{row.model} ({row.method})"
    return f"{name} vs {row.reference}" if row.reference else name


def _row_lines(rows: list[BoardRow], lines: list[str]) -> list[str]:
    """One line when every row has the same (the usual single run), else one per row, named."""
    if len(set(lines)) <= 1:
        return lines[:1]
    return [f"{row.name}: {text}" for row, text in zip(rows, lines, strict=True)]


def failed_judgements_text(errors: int) -> str:
    """Why a score carries SCORED_ANYWAY when judgements failed: the tables' footnote and the report's cards."""
    return f"scored with {errors} failed judgements (no verdict) left out of every denominator"


def build_leaderboards(rows: list[ScoreRow], scored_anyway: dict[str, str] | None = None,
                       counts: dict[str, dict[str, Counts]] | None = None,
                       comparability: dict[str, str] | None = None,
                       judge_cards: dict[str, str] | None = None,
                       trials: dict[str, dict[str, RowTrials]] | None = None,
                       costs: dict[str, Cost] | None = None) -> list[Leaderboard]:
    """``scored_anyway``: model -> why its rows are marked (a run scored with infrastructure failures): the
    row name gets SCORED_ANYWAY and the board a footnote saying why; a row whose scores left failed judgements
    out (``Score.errors``: a score file written with --score-anyway) is marked the same way without being told.
    A row judged by the run's own model (its judge label says self-judged) carries "(self-judged)" in its name.
    ``counts``: model -> group -> the run's query counts (counts.count_by_group), for footnotes that say how
    many queries were answered. ``comparability``: model -> its line (evaluation/comparability.py); a row
    without one (score or label files) says its setup is not recorded. ``judge_cards``: model -> its judge's
    audit line (evaluation/judge_cards.citation). ``trials``: model -> scoring mode -> its figures over trials (a set
    of trials: its cells read SoPR [95% CI] and tables of pass@k / pass^k follow the board). ``costs``: model -> its
    run's cost and latency (runs/cost.py), columns at the end of the CSV."""
    scored_anyway = scored_anyway or {}
    comparability = comparability or {}
    counts = counts or {}
    # failed judgements left out of a row's cells (a score file written with --score-anyway): the row is marked
    failed: Counter = Counter()
    for row in rows:
        failed[(row.score.metric, row.score.mode, row_name(row))] += row.score.errors
    boards: OrderedDict[tuple[str, str], Leaderboard] = OrderedDict()
    for row in rows:
        key = (row.score.metric, row.score.mode)
        board = boards.get(key)
        if board is None:
            board = boards[key] = Leaderboard(row.score.metric, row.score.mode, row.score.note, [], [])
        if row.judge and row.judge not in board.judges:
            board.judges.append(row.judge)
        name = row_name(row)
        if is_self_judged_label(row.judge):  # the run's own model judged it: the row itself says so
            name = f"{name} ({SELF_JUDGED})"
        errors = failed[(*key, row_name(row))]
        why = scored_anyway.get(row.model) or (failed_judgements_text(errors) if errors else None)
        if why:
            mark = f"{SCORED_ANYWAY} {name}: {why}"
            name = f"{name} {SCORED_ANYWAY}"
            if mark not in board.marks:
                board.marks.append(mark)
        target = next((r for r in board.rows if r.name == name), None)
        if target is None:
            target = BoardRow(name, model=row.model, counts=counts.get(row.model))
            board.rows.append(target)
            if row.model in comparability:
                board.comparability[name] = comparability[row.model]
            if row.model in (judge_cards or {}):
                board.judge_cards[name] = judge_cards[row.model]
            if row.model in (costs or {}):
                board.costs[name] = costs[row.model]
            figures = (trials or {}).get(row.model, {}).get(board.mode)
            if figures is not None and board.metric == "SoPR":
                board.trials[name] = figures
        target.cells[row.group] = row.score  # a later file for the same cell wins
    return list(boards.values())


def to_markdown(board: Leaderboard) -> str:
    header = board.header()
    lines = [f"**{board.caption}**", "", *board.comparability_lines, *board.judge_card_lines, "",
             "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cells) + " |" for cells in board.body()]
    if board.footnote:
        lines += ["", board.footnote]
    if board.trials:
        lines += trial_tables.markdown(board)
    return "\n".join(lines) + "\n"


def to_csv(board: Leaderboard) -> str:
    """The cells (a cell without a score is empty), then metric, mode, judge, each cell's denominator n, how
    many groups the Average averages, the row's comparability line and its judge's audit line."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    extra = (trial_tables.csv_header(board) if board.trials else []) + (COST_COLUMNS if board.costs else [])
    writer.writerow(board.header() + ["metric", "mode", "judge"] + [f"n {GROUP_LABELS[g]}" for g in COLUMNS]
                    + ["groups averaged", "comparability", "judge audit"] + extra)
    judge = "; ".join(board.judges)
    for row, cells in zip(board.rows, board.body(), strict=True):
        denominators = [str(row.cells[g].n) if g in row.cells else "" for g in COLUMNS]
        writer.writerow([c if c != MISSING else "" for c in cells] + [board.metric, board.mode, judge]
                        + denominators + [str(len(row.scored)), board.comparability_of(row),
                                          board.judge_card_of(row)]
                        + (trial_tables.csv_cells(board, row) if board.trials else [])
                        + (_cost_cells(board, row) if board.costs else []))
    return buffer.getvalue()


def _cost_cells(board: Leaderboard, row: BoardRow) -> list[str]:
    cost = board.costs.get(row.name)
    return [cost.csv_cells()[column] for column in COST_COLUMNS] if cost is not None else [""] * len(COST_COLUMNS)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "_": r"\_", "#": r"\#", "$": r"\$",
                  "{": r"\{", "}": r"\}", "^": r"\^{}", "~": r"\~{}"}


def _latex_escape(text: str) -> str:
    # one pass: replacing "\\" first and then "{" escaped the braces of its own \textbackslash{}
    text = "".join(_LATEX_SPECIAL.get(char, char) for char in text)
    return text.replace("±", r"$\pm$").replace("–", "--").replace(SCORED_ANYWAY, r"$\dagger$")


def to_latex(board: Leaderboard) -> str:
    header = board.header()
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "c" * (len(header) - 1) + "}",
             r"\toprule", " & ".join(_latex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(_latex_escape(c) for c in cells) + r" \\" for cells in board.body()]
    # the footnotes travel with the table, one sentence each
    notes = [board.caption, *board.comparability_lines, *board.judge_card_lines, *board.footnotes()]
    if board.trials:
        notes.append(trial_tables.definition(board))
    caption = " ".join(note if note.endswith(".") else note + "." for note in notes)
    lines += [r"\bottomrule", r"\end{tabular}"]
    if board.trials:
        lines += trial_tables.latex(board, _latex_escape)
    lines += [r"\caption{" + _latex_escape(caption) + "}", r"\end{table}"]
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
        # a cell without a score gets no bar (a bar of 0 would read as a score of 0)
        means = [s.mean if is_scored(s) else float("nan") for s in scores]
        errors = [s.std if is_scored(s) and board.with_std else 0.0 for s in scores]
        figures = board.trials.get(row.name)
        if figures is not None:  # a set of trials: the bar is SoPR over trials, its whisker the 95% CI
            stats = [figures.groups.get(g) for g in COLUMNS] + [figures.average]
            means = [t.sopr if t is not None and is_scored(s) else float("nan") for t, s in zip(stats, scores,
                                                                                                  strict=True)]
            errors = [[max(0.0, t.sopr - t.low) if t else 0.0 for t in stats],
                      [max(0.0, t.high - t.sopr) if t else 0.0 for t in stats]]
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
