"""The sweep matrix: OUT/NAME/sweep.json (`tba sweep`) and its cells' run folders -> one row per cell and judge.

A row: the cell's axis values, the judge, the cell's state (a failed, pending or unjudged cell keeps its row, with
its reason and no numbers), SoPR as the leaderboard prints it (the evaluation's upstream score rows: mean ± std over
the judge repeats; several groups: the leaderboard's Average), the valid turns, model calls, tokens and seconds of
the run's manifest, against the baseline cell (same judge) the paired difference on the queries both have with its
95% interval (paired bootstrap, seeded: the files are the same each time), and the cell's comparability on that
judge. ``write_matrix``: OUT/NAME/matrix.csv, .md, .tex (their text: sweep_matrix_render.py); nothing is written
into the run folders.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from toolbench_adapter.evaluation.audit.cards import citation
from toolbench_adapter.evaluation.scoring.paired import RESAMPLES, SEED, paired_bootstrap
from toolbench_adapter.evaluation.scoring.results import is_score_file, read_score_file, rows_from_label_file
from toolbench_adapter.evaluation.scoring.scores import UPSTREAM, Score
from toolbench_adapter.evaluation.scoring.trial_figures import figure_points, label_points, read_figures
from toolbench_adapter.evaluation.scoring.trials import (
    MAX_NEEDED,
    OVER_TRIALS,
    needed_for,
    observed_variance,
    query_mean,
    settled,
)
from toolbench_adapter.files.fileio import read_json, write_text_atomic
from toolbench_adapter.runs.cost import Prices, run_cost, runs_cost
from toolbench_adapter.runs.folder import MANIFEST
from toolbench_adapter.runs.trial_set import is_trial_set, read_trials, trial_dirs

from ..errors import InputError
from ..evaluation.comparability import SETUP_FIELD
from ..evaluation.comparability import verdict as comparability_verdict
from ..evaluation.evaluations import choose_evaluation
from .parser_runs import query_scores
from .sweep_matrix_render import Matrix, MatrixRow, to_csv, to_latex, to_markdown
from .sweep_record import DONE, read_sweep
from .tables import BoardRow

NOT_JUDGED, JUDGING_FAILED, UNREADABLE = "not judged", "judging failed", "unreadable"
NO_JUDGE = "no judge"  # a sweep without judges: every cell still gets its row, not judged
NO_JUDGE_REASON = "the spec has no judges (judges: []): run, not judged"


# ---------------------------------------------------------------- one row

def _value(value) -> str:
    return value if isinstance(value, str) else str(value)


def _cell_reason(cell: dict) -> str:
    reason = str(cell.get("reason") or "")
    redo = cell.get("redo")
    return f"{reason}{'; ' if reason else ''}redo: {redo}" if redo else reason


def _sopr(chosen) -> Score | None:
    """The run's SoPR as its leaderboard prints it: upstream mode, one group's score or the groups' Average."""
    paths = [p for p in chosen.score_files() if is_score_file(p)]
    rows = ([r for p in paths for r in read_score_file(p)] if paths else  # a failed one wrote no score file
            [r for p in chosen.label_files() if p.suffix == ".json" for r in rows_from_label_file(p)])
    cells = {r.group: r.score for r in rows if r.score.metric == "SoPR" and r.score.mode == UPSTREAM}
    return BoardRow("cell", cells).average


def _set_row(row: MatrixRow, chosen, prices: Prices | None) -> dict:
    """Fill a set of trials' figures (its evaluation's figures over trials); returns the manifest of its first trial
    (the setup facts every trial shares) with the set's totals."""
    record = read_trials(row.run_dir)
    figures = read_figures(chosen.eval_dir).get(UPSTREAM)
    if figures is None or figures.average is None:
        raise InputError("the set's figures hold no upstream score", path=chosen.eval_dir, field="modes.upstream",
                         fix="rerun tba evaluate on the set")
    average = figures.average
    row.trials, row.trial_stats = record["trials"], average
    runs = [statistics.fmean(x) for x in zip(*figures.trial_sopr.values(), strict=False)] if figures.trial_sopr else []
    row.sopr = Score("SoPR", UPSTREAM, average.sopr, statistics.pstdev(runs) if len(runs) > 1 else 0.0,
                     average.queries, runs)
    row.points = figure_points(figures)
    row.scores = {key: query_mean(value) for key, value in row.points.items() if query_mean(value) is not None}
    row.cost = runs_cost(trial_dirs(row.run_dir, record), prices)
    manifest = read_json(trial_dirs(row.run_dir, record)[0] / MANIFEST, "run manifest")
    return {**manifest, "totals": record.get("totals") or {}}


def _judged_row(row: MatrixRow, evaluation_id: str, cell: dict, prices: Prices | None = None) -> None:
    """Fill a done cell's row from its run folder (or set of trials) and that judge's evaluation."""
    chosen, _ = choose_evaluation(row.run_dir, evaluation_id)
    row.evaluation, row.judge_record = chosen.id, chosen.data.get("judge")
    if not chosen.complete:
        row.state = JUDGING_FAILED
        redo = chosen.data.get("command") or cell.get("redo")
        row.reason = chosen.summary() + (f"; redo: {redo}" if redo else "")
        return
    if is_trial_set(row.run_dir):
        manifest = _set_row(row, chosen, prices)
        row.seconds = row.cost.wall_s
    else:
        manifest = read_json(row.run_dir / MANIFEST, "run manifest")
        row.sopr = _sopr(chosen)
        labels = [f for f in chosen.label_files() if f.suffix == ".json"]
        row.scores = query_scores(labels)
        row.points = label_points(labels)
        row.cost = run_cost(row.run_dir, prices)
        seconds = [s.get("seconds") for s in manifest.get("sessions") or []
                   if isinstance(s.get("seconds"), int | float)]
        row.seconds = sum(seconds) if seconds else None
    totals = manifest.get("totals") or {}
    row.valid_turns, row.model_turns = totals.get("valid_turns"), totals.get("model_turns")
    row.model_calls, row.tokens = totals.get("model_calls"), totals.get("total_tokens")
    row.comparable = comparability_verdict(manifest.get(SETUP_FIELD), row.judge_record)


def build_row(sweep_dir: Path, cell: dict, judge: str, axes: list[str], prices: Prices | None = None) -> MatrixRow:
    row = MatrixRow(cell["name"], {a: _value(cell["axes"][a]) for a in axes}, judge, cell["state"],
                    run_dir=sweep_dir / cell["run_dir"])
    if row.state != DONE:
        row.reason = _cell_reason(cell) or f"the cell is {row.state}"
        return row
    evaluation_id = (cell.get("evaluations") or {}).get(judge)
    if not evaluation_id:
        row.state, row.reason = NOT_JUDGED, (NO_JUDGE_REASON if judge == NO_JUDGE else
                                             f"no evaluation by {judge} recorded in sweep.json")
        return row
    try:
        _judged_row(row, evaluation_id, cell, prices)
    except InputError as exc:  # listed with why, never dropped: the other rows still stand
        row.state, row.reason, row.sopr, row.scores = UNREADABLE, str(exc).replace("\n", " "), None, {}
        row.trial_stats, row.points = None, {}
    return row


# ---------------------------------------------------------------- pairing and the matrix

def pair(rows: list[MatrixRow], baseline: str) -> None:
    """Each row against the baseline row of its judge: the paired difference on the queries both have."""
    base = next(r for r in rows if r.cell == baseline)
    base.baseline = True
    for row in rows:
        if row is base or not row.scores:
            continue
        if not base.scores:
            row.paired_note = f"baseline {base.state}"
            continue
        shared = sorted(set(base.scores) & set(row.scores))
        if not shared:
            row.paired_note = "no query in common"
            continue
        row.paired = paired_bootstrap([base.scores[q] for q in shared], [row.scores[q] for q in shared],
                                      seed=SEED, resamples=RESAMPLES)
        row.verdict = verdict(row.paired, {q: base.points[q] for q in shared if q in base.points},
                              {q: row.points[q] for q in shared if q in row.points}, min(base.trials, row.trials))


def verdict(paired, base: dict, other: dict, trials: int) -> str:
    """"settled" (the paired 95% CI excludes 0), or "not settled: about M more trials (or N more queries) would
    detect the observed difference" (80% power, 5% two-sided, from the two cells' observed variances), never a bare
    difference."""
    if settled(paired):
        return "settled"
    difference = paired.mean * 100
    if difference == 0:
        return "not settled: no difference observed"
    variance = observed_variance(base, other)
    if variance is None:
        return "not settled: too few shared queries to say how many more would detect it"
    needed = needed_for(difference, variance, paired.n, trials)
    if needed.queries is None or needed.queries >= MAX_NEEDED:
        return "not settled: the observed difference is too small to detect with any number of queries at hand"
    queries = f"{max(1, needed.queries - paired.n)} more queries"
    if not variance.trials_credited:
        return (f"not settled: about {queries} would detect the observed difference (one trial per query: whether "
                "more trials would is not known; trials: K measures it)")
    if needed.trials is None:
        return f"not settled: more trials alone would not detect the observed difference; about {queries} would"
    return (f"not settled: about {max(1, needed.trials - trials)} more trials (or {queries}) would detect the "
            "observed difference")


def notes_of(data: dict, rows: list[MatrixRow], delta: str | None, prices: Prices | None = None) -> list[str]:
    """What the columns mean, which judge each label stands for (with its audit) and the rows without numbers."""
    notes = [f"{len(data['cells'])} cells × {len(data['judges'])} judge(s); spec {data.get('spec_file') or '?'} "
             f"(sha256 {str(data.get('spec_sha256') or '?')[:12]})"]
    for judge in (j["label"] for j in data["judges"]):
        record = next((r.judge_record for r in rows if r.judge == judge and r.judge_record), None)
        notes.append(f"judge {judge}: " + (f"{record.get('label') or record.get('name')}; {citation(record)}"
                                           if record else "no cell judged by it"))
    notes.append("SoPR: upstream (Solved 1, Unsure 0.5, over the judged queries), mean ± population std over the "
                 "judge repeats (one repeat: no ±); several groups: the leaderboard's Average (mean of the group "
                 "means ± mean of the group stds); n: the queries with a verdict")
    trials = int(data.get("trials") or 1)
    if trials > 1:
        notes.append(f"every cell is a set of {trials} trials (tba run --trials): {OVER_TRIALS}")
    notes.append("valid turns: model turns (re-asks included) whose calls all name a listed function with arguments "
                 "its schema accepts; model calls, tokens: the run manifest's totals (a set of trials: over every "
                 "trial); seconds: its sessions' wall time summed; latency: the model's seconds per call, p50 / p95 "
                 "over every call; cost: " + (f"from {prices.path} (per million input and output tokens, "
                                              f"{prices.currency})" if prices else "not priced (no --prices FILE: "
                                              "none is shipped or guessed); matrix.csv has tokens per query"))
    if delta:
        notes.append(f"{delta}: label points per query (mean over the repeats) minus the baseline's, averaged over "
                     f"the n shared queries both cells have, in points; 95% CI: paired bootstrap over those queries "
                     f"({RESAMPLES} resamples, seed {SEED}); queries are pooled across groups, so it can differ from "
                     "the difference of the SoPR column. After it, per comparison: settled (the CI excludes 0) or not "
                     "settled and about how many more trials or queries would detect the observed difference (80% "
                     "power, 5% two-sided, from the two cells' observed variances between queries and trial to "
                     "trial)")
    notes.append("comparable: the cell's setup and judge against the StableToolBench leaderboard's (comparability.py); "
                 "matrix.csv has each row's full line")
    unjudged = [r for r in rows if r.reason == NO_JUDGE_REASON]
    if unjudged:  # said once, not once per row
        notes.append(f"no numbers in the {len(unjudged)} row(s): {NO_JUDGE_REASON} (model calls, tokens and seconds "
                     "are in each cell's manifest.json)")
    empty = [r for r in rows if r.sopr is None and r.reason != NO_JUDGE_REASON]
    if empty:
        notes.append(f"{len(empty)} row(s) without numbers: " + "; ".join(
            f"{r.cell} ({r.judge}) {r.state}: {r.reason}" for r in empty))
    return notes


def build_matrix(sweep_dir: str | Path, prices: Prices | None = None) -> Matrix:
    """``prices`` (runs/cost.read_prices): each row's cost in money (else tokens only)."""
    sweep_dir = Path(sweep_dir)
    data = read_sweep(sweep_dir)
    rows = []
    # judge by judge: a difference pairs rows of one judge
    for judge in [j["label"] for j in data["judges"]] or [NO_JUDGE]:
        judged = [build_row(sweep_dir, cell, judge, data["axes"], prices) for cell in data["cells"]]
        if data.get("baseline"):
            pair(judged, data["baseline"])
        rows += judged
    matrix = Matrix(data["name"], list(data["axes"]), data.get("baseline"), rows, [], sweep_dir,
                    trials=int(data.get("trials") or 1))
    matrix.notes = notes_of(data, rows, matrix.delta_header, prices)
    return matrix


def write_matrix(matrix: Matrix, sweep_dir: str | Path) -> list[Path]:
    """OUT/NAME/matrix.csv, matrix.md, matrix.tex (each written atomically; one that would not change is left as it
    is: a resumed sweep with nothing to do rewrites nothing)."""
    out = Path(sweep_dir)
    written = []
    for name, render in (("matrix.csv", to_csv), ("matrix.md", to_markdown), ("matrix.tex", to_latex)):
        text, path = render(matrix), out / name
        try:
            unchanged = path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            unchanged = False
        written.append(path if unchanged else write_text_atomic(path, text))
    return written
