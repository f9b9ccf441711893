"""A set of trials' figures (issue 42): its trials' labels -> per group and on the Average, per scoring mode, the
statistics over trials (trials.py) -> written beside the set's evaluation (``SET/eval/<id>/trials.json``) and read
back as score rows with the figures a leaderboard prints beside them.

Upstream mode: a query counts in the trials that have an answer file for it (each trial's own denominator, as
upstream's). Strict: every test id in every trial, a trial without an answer for it Unsolved (one verdict of 0).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.evaluation.storage import read_label_file
from toolbench_adapter.files.fileio import read_json, write_json_atomic

from .results import ScoreRow
from .scores import STRICT, UPSTREAM, Score, sopr
from .trials import OVER_TRIALS, TrialStats, average_stats, group_stats, solved_count

FIGURES = "trials.json"  # in SET/eval/<id>/
FIGURES_FORMAT = "toolbench-adapter/trial-figures"

# one trial's labels: group -> query id -> repeat -> Label
TrialLabels = Mapping[str, Mapping[str, Mapping[int, Label]]]


def verdicts(repeats: Mapping[int, Label]) -> list[float]:
    """A query's label points in one trial, repeat by repeat; failed judgements (no verdict) left out."""
    return [label.points for _, label in sorted(repeats.items()) if label is not Label.ERROR]


def points_by_group(trials: Sequence[TrialLabels], mode: str = UPSTREAM,
                    test_ids: Mapping[str, Iterable[str]] | None = None) -> dict[str, dict[str, list[list[float]]]]:
    """group -> query id -> trials -> repeats' points. ``test_ids`` (group -> ids): strict mode's denominator."""
    groups = list(dict.fromkeys(g for trial in trials for g in trial))
    out: dict[str, dict[str, list[list[float]]]] = {}
    for group in groups:
        if mode == STRICT:
            ids = [str(i) for i in (test_ids or {}).get(group, [])]
            if not ids:
                continue
            out[group] = {qid: [verdicts(t[group][qid]) if qid in t.get(group, {}) else [0.0] for t in trials]
                          for qid in ids}
        else:
            ids = list(dict.fromkeys(q for t in trials for q in t.get(group, {})))
            out[group] = {qid: [verdicts(t[group][qid]) for t in trials if qid in t.get(group, {})] for qid in ids}
    return out


@dataclass
class ModeFigures:
    """One scoring mode's figures of a set: per group and the Average, and each trial's own SoPR per group."""

    mode: str
    groups: dict[str, TrialStats]
    average: TrialStats | None
    trial_sopr: dict[str, list[float]]  # group -> each trial's SoPR (mean over its repeats), trial 0 first
    errors: dict[str, int]  # group -> failed judgements over every trial
    missing: dict[str, int]  # strict: group -> test ids without an answer, summed over trials
    solved: dict[str, dict[str, list[int]]]  # group -> query id -> [Solved trials, trials with a verdict]
    # group -> query id -> trials -> repeats' points: what a paired comparison and a pilot's variances read
    points: dict[str, dict[str, list[list[float]]]] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"mode": self.mode, "groups": {g: s.as_dict() for g, s in self.groups.items()},
                "average": self.average.as_dict() if self.average else None, "trial_sopr": self.trial_sopr,
                "errors": self.errors, "missing": self.missing, "solved": self.solved, "points": self.points}

    @classmethod
    def from_dict(cls, data: Mapping) -> ModeFigures:
        return cls(mode=str(data["mode"]), groups={g: TrialStats.from_dict(s) for g, s in data["groups"].items()},
                   average=TrialStats.from_dict(data["average"]) if data.get("average") else None,
                   trial_sopr={g: [float(x) for x in v] for g, v in data["trial_sopr"].items()},
                   errors={g: int(v) for g, v in data.get("errors", {}).items()},
                   missing={g: int(v) for g, v in data.get("missing", {}).items()},
                   solved={g: {q: [int(c), int(n)] for q, (c, n) in v.items()} for g, v in data["solved"].items()},
                   points={g: {q: [[float(x) for x in r] for r in t] for q, t in v.items()}
                           for g, v in (data.get("points") or {}).items()})


def mode_figures(trials: Sequence[TrialLabels], mode: str = UPSTREAM,
                 test_ids: Mapping[str, Iterable[str]] | None = None) -> ModeFigures | None:
    """None: no group has a query with a verdict in this mode."""
    points = points_by_group(trials, mode, test_ids)
    points = {g: q for g, q in points.items() if any(any(len(r) for r in trials_) for trials_ in q.values())}
    if not points:
        return None
    groups = {g: group_stats(q) for g, q in points.items()}
    trial_sopr = {}
    for group in points:
        per_trial = []
        for trial in trials:
            labels = {q: dict(r) for q, r in trial.get(group, {}).items()}
            ids = list((test_ids or {}).get(group, [])) if mode == STRICT else None
            score = sopr(labels, mode=mode, test_ids=ids) if labels or ids else None
            if score is not None and score.runs:
                per_trial.append(score.mean)
        trial_sopr[group] = per_trial
    errors = {g: sum(1 for t in trials for r in t.get(g, {}).values() for lb in r.values() if lb is Label.ERROR)
              for g in points}
    # strict: the test ids without an answer in a trial, as a mean over the trials (the row's "n - missing of n")
    missing = ({g: round(sum(1 for t in trials for q in points[g] if q not in t.get(g, {})) / len(trials))
                for g in points} if mode == STRICT else {})
    solved = {g: {q: list(solved_count(v)) for q, v in qs.items()} for g, qs in points.items()}
    return ModeFigures(mode, groups, average_stats(points), trial_sopr, errors, missing, solved, points)


def set_figures(trials: Sequence[TrialLabels], test_ids: Mapping[str, Iterable[str]] | None = None) -> dict:
    """The set's figures file's content: upstream mode, and strict when the test ids are known."""
    modes = [mode_figures(trials, UPSTREAM)]
    if test_ids:
        modes.append(mode_figures(trials, STRICT, test_ids))
    return {"format": FIGURES_FORMAT, "version": 1, "trials": len(trials), "definition": OVER_TRIALS,
            "modes": {m.mode: m.as_dict() for m in modes if m is not None}}


def label_points(label_files: Iterable[Path]) -> dict[tuple[str, str], list[list[float]]]:
    """(group, query id) -> one trial's repeats' points, from a run's evaluation's JSON label files (a run without
    trials is one trial)."""
    out = {}
    for path in label_files:
        labels = read_label_file(path)
        for qid, repeats in labels.labels.items():
            out[(labels.group, str(qid))] = [verdicts(repeats)]
    return out


def figure_points(figures: ModeFigures) -> dict[tuple[str, str], list[list[float]]]:
    """(group, query id) -> trials -> repeats' points of a set's figures."""
    return {(group, qid): trials for group, queries in figures.points.items() for qid, trials in queries.items()}


def write_figures(eval_dir: str | Path, figures: dict) -> Path:
    return write_json_atomic(Path(eval_dir) / FIGURES, figures)


def read_figures(eval_dir: str | Path) -> dict[str, ModeFigures]:
    """mode -> its figures, from a set's evaluation folder; InputError naming the file when it cannot be read."""
    path = Path(eval_dir) / FIGURES
    data = read_json(path, "figures over trials")
    if not isinstance(data, dict) or data.get("format") != FIGURES_FORMAT:
        raise InputError("not a set's figures over trials", path=path, field="format",
                         fix="rerun tba evaluate on the set of trials: it rewrites them")
    try:
        return {mode: ModeFigures.from_dict(figures) for mode, figures in data["modes"].items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"malformed figures over trials ({type(exc).__name__}: {exc})", path=path, field="modes",
                         fix="rerun tba evaluate on the set of trials: it rewrites them") from None


def figure_rows(figures: Mapping[str, ModeFigures], *, model: str, method: str | None, judge: str | None,
                source: str | None = None) -> list[ScoreRow]:
    """Score rows of a set, one per mode and group: the mean over trials (``runs``: each trial's SoPR, ``std`` their
    population spread); what a table prints in their cells is the figures' (tables.RowTrials)."""
    rows = []
    for mode, figure in figures.items():
        for group, stats in figure.groups.items():
            runs = figure.trial_sopr.get(group, [])
            score = Score("SoPR", mode, stats.sopr, statistics.pstdev(runs) if len(runs) > 1 else 0.0, stats.queries,
                          runs, figure.errors.get(group, 0), figure.missing.get(group, 0))
            rows.append(ScoreRow(model, group, score, method=method, judge=judge, source=source))
    return rows
