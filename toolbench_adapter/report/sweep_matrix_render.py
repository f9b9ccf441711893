"""The sweep matrix's rows (Matrix, MatrixRow: sweep_matrix.py fills them) and their text: Markdown and LaTeX (the
figures as a reader sees them), CSV (each number in its own column, for a script), and the HTML table `tba report
--index` puts first. A row without numbers shows its state and reason and leaves the number columns empty; no row
is left out. Text from the spec or sweep.json (labels, reasons) is shown with its control and direction characters
escaped (visible.py): a NUL or a right-to-left override never reaches a file raw."""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.evaluation.scoring.paired import PairedDifference
from toolbench_adapter.evaluation.scoring.scores import Score
from toolbench_adapter.evaluation.scoring.trials import TrialStats
from toolbench_adapter.runs.cost import Cost

from ..evaluation.comparability import Verdict
from .tables import _latex_escape
from .visible import visible

BASELINE = "baseline"
NUMBERS = ["SoPR", "n", "valid turns", "model calls", "tokens", "seconds", "latency p50 / p95 (s)", "cost"]


@dataclass
class MatrixRow:
    cell: str
    axes: dict[str, str]
    judge: str  # the sweep's judge label
    state: str  # the cell's (done, failed, pending, running), or for this judge: not judged, judging failed, unreadable
    reason: str = ""
    run_dir: Path | None = None
    evaluation: str | None = None  # its id under RUN/eval/
    judge_record: dict | None = None  # evaluation.json's judge (label, id: what the notes cite)
    sopr: Score | None = None
    valid_turns: int | None = None
    model_turns: int | None = None
    model_calls: int | None = None
    tokens: int | None = None
    seconds: float | None = None
    comparable: Verdict | None = None  # against the StableToolBench leaderboard (comparability.verdict)
    baseline: bool = False
    paired: PairedDifference | None = None
    paired_note: str = ""  # why no difference: the baseline has no numbers, no query in common
    verdict: str = ""  # settled / not settled: what would settle it (sweep_matrix.verdict)
    scores: dict = field(default_factory=dict, repr=False)  # (group, query id) -> label points over the repeats
    points: dict = field(default_factory=dict, repr=False)  # (group, query id) -> trials -> repeats' points
    trials: int = 1  # a set of trials: how many
    trial_stats: TrialStats | None = None  # a set's figures over trials (upstream, the Average)
    cost: Cost | None = None  # calls, tokens, latency, money (runs/cost.py)

    @property
    def self_judged(self) -> bool:
        """The cell's own model judged it (a model axis with the judge among its values): marked on its row."""
        return bool((self.judge_record or {}).get("self_judged"))

    @property
    def judge_text(self) -> str:
        return self.judge + (" (self-judged)" if self.self_judged else "")

    @property
    def comparability(self) -> str:
        return self.comparable.line if self.comparable is not None else ""


@dataclass
class Matrix:
    name: str
    axes: list[str]
    baseline: str | None
    rows: list[MatrixRow]
    notes: list[str]
    sweep_dir: Path
    trials: int = 1  # the sweep's trials: (every cell a set of that many)

    @property
    def delta_header(self) -> str | None:
        return f"ΔSoPR vs {self.baseline} (95% CI)" if self.baseline else None

    @property
    def columns(self) -> list[str]:
        return header(self)


def trial_columns(matrix: Matrix) -> list[str]:
    """With trials: pass@K and pass^K of the Average (every k: matrix.csv)."""
    return [f"pass@{matrix.trials} / pass^{matrix.trials}"] if matrix.trials > 1 else []


def header(matrix: Matrix) -> list[str]:
    delta = [matrix.delta_header] if matrix.delta_header else []
    return [visible(h) for h in ["cell", *matrix.axes, "judge", "state", *NUMBERS, *trial_columns(matrix), *delta,
                                 "comparable"]]


def comparable_text(row: MatrixRow) -> str:
    """``yes``, ``as declared: judge`` or ``no: queries, judge`` (the conditions named; matrix.csv holds the full
    line)."""
    if row.comparable is None:
        return ""
    named = row.comparable.reasons if row.comparable.reasons else row.comparable.declared
    return row.comparable.word + (": " + ", ".join(r.split(":", 1)[0] for r in named) if named else "")


def delta_text(row: MatrixRow) -> str:
    if row.baseline:
        return BASELINE
    p = row.paired
    if p is None:
        return row.paired_note
    return f"{p.mean * 100:+.1f} [{p.low * 100:+.1f}, {p.high * 100:+.1f}] (n={p.n}): {row.verdict}"


def number_texts(row: MatrixRow) -> list[str]:
    if row.sopr is None:
        return [""] * len(NUMBERS)
    turns = (f"{row.valid_turns / row.model_turns:.1%} ({row.valid_turns}/{row.model_turns})"
             if row.model_turns else "not recorded")
    sopr = row.trial_stats.text() if row.trial_stats is not None else row.sopr.text()
    return [sopr, str(row.sopr.n), turns, _int(row.model_calls), _int(row.tokens),
            f"{row.seconds:.1f}" if row.seconds is not None else "not recorded", latency_text(row.cost),
            row.cost.money_text() if row.cost is not None else "not recorded"]


def latency_text(cost: Cost | None) -> str:
    if cost is None or cost.latency_p50_s is None:
        return "not recorded"
    return f"{cost.latency_p50_s:.3f} / {cost.latency_p95_s:.3f}"


def trial_texts(matrix: Matrix, row: MatrixRow) -> list[str]:
    if matrix.trials <= 1:
        return []
    stats = row.trial_stats
    if stats is None:
        return [""]
    k = matrix.trials
    at, hat = stats.pass_at.get(k), stats.pass_hat.get(k)
    return ["" if at is None or hat is None else f"{at:.1f} / {hat:.1f}"]


def _int(value) -> str:
    return str(value) if value is not None else "not recorded"


def row_texts(matrix: Matrix, row: MatrixRow) -> list[str]:
    state = row.state if row.sopr is not None or not row.reason else f"{row.state}: {row.reason}"
    delta = [delta_text(row)] if matrix.delta_header else []
    return [visible(t) for t in [row.cell, *row.axes.values(), row.judge_text, state, *number_texts(row),
                                 *trial_texts(matrix, row), *delta, comparable_text(row)]]


def title(matrix: Matrix) -> str:
    return f"Sweep {matrix.name}: {len(matrix.rows)} rows (cell × judge)"


def to_markdown(matrix: Matrix) -> str:
    def md(text: str) -> str:
        return text.replace("|", r"\|").replace("\n", " ")

    names = header(matrix)
    lines = [f"# {title(matrix)}", "", "| " + " | ".join(map(md, names)) + " |", "|" + "---|" * len(names)]
    lines += ["| " + " | ".join(md(t) for t in row_texts(matrix, row)) + " |" for row in matrix.rows]
    return "\n".join([*lines, "", *(f"- {md(visible(note))}" for note in matrix.notes)]) + "\n"


def to_latex(matrix: Matrix) -> str:
    def tex(text: str) -> str:
        return _latex_escape(text).replace("Δ", r"$\Delta$").replace("×", r"$\times$")

    names = header(matrix)
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "l" * (len(names) - 1) + "l}", r"\toprule",
             " & ".join(map(tex, names)) + r" \\", r"\midrule"]
    lines += [" & ".join(tex(t) for t in row_texts(matrix, row)) + r" \\" for row in matrix.rows]
    caption = " ".join(note if note.endswith(".") else note + "." for note in map(visible, [title(matrix), *matrix.notes]))
    lines += [r"\bottomrule", r"\end{tabular}", r"\caption{" + tex(caption) + "}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_csv(matrix: Matrix) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    delta = ([f"ΔSoPR vs {matrix.baseline}", "ci95_low", "ci95_high", "shared_queries", "verdict"]
             if matrix.baseline else [])
    k = matrix.trials
    trials = (["trials", "sopr_ci95_low", "sopr_ci95_high", *[f"pass@{i}" for i in range(1, k + 1)],
               *[f"pass^{i}" for i in range(1, k + 1)], "flip_rate", "agent_variance_share"] if k > 1 else [])
    writer.writerow([visible(h) for h in [
        "cell", *matrix.axes, "judge", "self_judged", "evaluation", "state", "reason", "sopr", "sopr_std",
        "judge_repeats", "judged_queries", "valid_turns", "model_turns", "model_calls", "tokens", "seconds",
        *COST_CSV, *trials, *delta, "comparable", "comparability"]])
    for row in matrix.rows:
        s = row.sopr
        score = ([f"{s.mean:.2f}", "" if s.single_repeat else f"{s.std:.2f}", len(s.runs), s.n] if s is not None
                 else [""] * 4)
        figures = [_blank(v) for v in (row.valid_turns, row.model_turns, row.model_calls, row.tokens)]
        figures.append(f"{row.seconds:.2f}" if row.seconds is not None else "")
        if not matrix.baseline:
            paired = []
        elif row.baseline:
            paired = [BASELINE, "", "", "", ""]
        elif row.paired is not None:
            p = row.paired
            paired = [f"{p.mean * 100:.2f}", f"{p.low * 100:.2f}", f"{p.high * 100:.2f}", p.n, row.verdict]
        else:
            paired = [row.paired_note, "", "", "", ""]
        figures = figures + cost_cells(row.cost) if s is not None else [""] * (len(figures) + len(COST_CSV))
        writer.writerow([visible(v) if isinstance(v, str) else v for v in [
            row.cell, *row.axes.values(), row.judge, row.self_judged, row.evaluation or "", row.state, row.reason,
            *score, *figures, *trial_cells(row, k), *paired, "" if row.comparable is None else row.comparable.word,
            row.comparability]])
    return buffer.getvalue()


# the matrix CSV's cost columns (named with tokens, p50, p95, cost), per query where a count
COST_CSV = ["model_calls_per_query", "prompt_tokens_per_query", "completion_tokens_per_query", "latency_p50_s",
            "latency_p95_s", "wall_s", "cost", "cost_currency"]


def cost_cells(cost: Cost | None) -> list[str]:
    if cost is None:
        return [""] * len(COST_CSV)
    cells = cost.csv_cells()
    return [cells["model calls per query"], cells["prompt tokens per query"], cells["completion tokens per query"],
            cells["model latency p50 s"], cells["model latency p95 s"], cells["wall s"], cells["cost"],
            cells["cost currency"]]


def trial_cells(row: MatrixRow, k: int) -> list[str]:
    if k <= 1:
        return []
    stats = row.trial_stats
    if stats is None:
        return [""] * (6 + 2 * k)
    share = stats.variance.agent_share
    return [str(row.trials), f"{stats.low:.2f}", f"{stats.high:.2f}",
            *[_number(stats.pass_at.get(i)) for i in range(1, k + 1)],
            *[_number(stats.pass_hat.get(i)) for i in range(1, k + 1)], _number(stats.flip_rate),
            _number(None if share is None else 100 * share)]


def _number(value) -> str:
    return "" if value is None else f"{value:.2f}"


def _blank(value) -> str:
    return "" if value is None else str(value)


def to_html(matrix: Matrix, links: dict[str, str]) -> str:
    """The matrix as an HTML table; ``links``: cell name -> its run page (relative), the name then a link."""
    def cell(index: int, text: str, name: str) -> str:
        if index == 0 and name in links:
            return f'<td><a href="{html.escape(links[name])}">{html.escape(text)}</a></td>'
        return f"<td>{html.escape(text)}</td>"

    head = "".join(f"<th>{html.escape(h)}</th>" for h in header(matrix))
    body = ["<tr>" + "".join(cell(i, t, row.cell) for i, t in enumerate(row_texts(matrix, row))) + "</tr>"
            for row in matrix.rows]
    notes = "".join(f"<li>{html.escape(visible(note))}</li>" for note in matrix.notes)
    return (f'<section id="matrix"><h2>{html.escape(title(matrix))}</h2>\n<table class="queries index matrix"><tr>'
            f'{head}</tr>\n' + "\n".join(body) + f'</table>\n<ul class="meta">{notes}</ul></section>')
