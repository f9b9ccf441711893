"""The report's figures (matplotlib, PNG bytes): pass rate per group with std bars, error kinds and status
codes per group, model calls per query, latency per query. A figure with nothing to show is None, so the
page can say why instead of drawing an empty frame; so is a figure of one bar (one group of one run, every
query with the same number of calls), which says no more than the number beside it."""

from __future__ import annotations

import io
from collections import Counter

from ..protocol.env import STATUS_NAMES
from .run_data import RunData

DPI = 80
PASS_RATE_METRIC, PASS_RATE_MODE = "SoPR", "upstream"
STATUS_NORMAL, STATUS_FINAL = 0, 3


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    plt = _pyplot()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def _pass_rate_cells(runs: list[RunData]) -> tuple[list[dict], list[str]]:
    cells = []
    for run in runs:
        scores = {row.group: row.score for row in run.score_rows
                  if row.score.metric == PASS_RATE_METRIC and row.score.mode == PASS_RATE_MODE}
        cells.append(scores)
    groups = [g for run in runs for g in run.groups]
    return cells, list(dict.fromkeys(g for g in groups if any(g in scores for scores in cells)))


def _scored(runs: list[RunData]) -> list:
    """The groups' scores that rest on verdicts (n > 0: a group whose every judgement failed has none)."""
    cells, _groups = _pass_rate_cells(runs)
    return [score for run_cells in cells for score in run_cells.values() if score.n]


def all_zero(runs: list[RunData]) -> bool:
    """No group has a non-zero score: a figure would be an empty frame."""
    return all(score.mean == 0 and score.std == 0 for score in _scored(runs))


def pass_rate_why(runs: list[RunData]) -> str:
    """Why the pass-rate figure is not drawn (when pass_rate gives None)."""
    if not any(run.score_rows for run in runs):
        return "not evaluated: no judge scores" if len(runs) == 1 else "no run is evaluated"
    if not _scored(runs):
        return "no group has a verdict to score (every judgement failed)"
    if all_zero(runs):
        return f"every group scores 0.0 ({PASS_RATE_METRIC} {PASS_RATE_MODE}): there is no bar to draw"
    return "one group: the headline gives its score" if len(runs) == 1 else "one bar only"


def pass_rate(runs: list[RunData]) -> bytes | None:
    """SoPR (upstream scoring) per group, one bar per run, the std over judge repeats as error bars."""
    cells, groups = _pass_rate_cells(runs)
    if len(groups) * len(runs) < 2 or all_zero(runs):
        return None  # nothing, one bar (the headline says it), or only zeros (an empty frame): pass_rate_why
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(max(4.5, 1.4 * len(groups) * max(1, len(runs)) ** 0.5), 3.2))
    width = 0.8 / len(runs)
    for index, (run, scores) in enumerate(zip(runs, cells, strict=True)):
        xs = [i + (index - (len(runs) - 1) / 2) * width for i in range(len(groups))]
        means = [scores[g].mean if g in scores else 0.0 for g in groups]
        stds = [scores[g].std if g in scores else 0.0 for g in groups]
        axis.bar(xs, means, width, yerr=stds, capsize=3, label=run.name)
    axis.set_xticks(range(len(groups)), groups, fontsize=8)
    axis.set_ylim(0, 100)
    axis.set_ylabel("SoPR % (upstream)")
    axis.set_title("Pass rate per group (± std over judge repeats)", fontsize=9)
    if len(runs) > 1:
        axis.legend(fontsize=7)
    return _png(figure)


def error_kinds(run: RunData) -> bytes | None:
    """Steps per parse error kind (left) and per abnormal status code (right), stacked per group."""
    groups = run.groups
    errors = {g: Counter() for g in groups}
    statuses = {g: Counter() for g in groups}
    for query in run.queries:
        errors[query.group].update({k: n for k, n in query.errors.items() if k != "none"})
        statuses[query.group].update({k: n for k, n in query.statuses.items()
                                      if k not in (STATUS_NORMAL, STATUS_FINAL)})
    bars = sum(len(c) for c in errors.values()) + sum(len(c) for c in statuses.values())
    if bars < 2:
        return None  # nothing, or one bar
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for axis, counts, title in ((axes[0], errors, "parse error kinds"),
                                (axes[1], statuses, "status codes other than 0 normal, 3 final_answer")):
        kinds = sorted({k for c in counts.values() for k in c}, key=str)
        bottom = [0] * len(groups)
        for kind in kinds:
            values = [counts[g].get(kind, 0) for g in groups]
            axis.bar(range(len(groups)), values, bottom=bottom, label=status_label(kind))
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
        axis.set_xticks(range(len(groups)), groups, fontsize=7)
        axis.set_ylabel("steps")
        axis.set_title(title, fontsize=9)
        if kinds:
            axis.legend(fontsize=6)
        else:
            axis.text(0.5, 0.5, "none", ha="center", transform=axis.transAxes, color="grey")
    return _png(figure)


def status_label(kind) -> str:
    """A status code by its number and name ("1 no_such_function"); other kinds (parse errors) as they are."""
    return f"{kind} {STATUS_NAMES[kind]}" if isinstance(kind, int) and kind in STATUS_NAMES else str(kind)


def steps_per_query(run: RunData) -> bytes | None:
    calls = [q.model_calls for q in run.queries if q.model_calls is not None]
    if len(set(calls)) < 2:
        return None  # nothing, or every query made the same number of calls: one bar
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(4.5, 3.2))
    axis.hist(calls, bins=min(30, max(1, max(calls) - min(calls) + 1)), color="#4c72b0")
    axis.set_xlabel("model calls per query")
    axis.set_ylabel("queries")
    axis.set_title(f"Steps per query (median {sorted(calls)[len(calls) // 2]})", fontsize=9)
    return _png(figure)


def latency(run: RunData) -> bytes | None:
    walls = [q.stats["wall_seconds"] for q in run.queries if q.stats.get("wall_seconds") is not None]
    if len(set(walls)) < 2:
        return None  # nothing, or one bar
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(4.5, 3.2))
    axis.hist(walls, bins=30, color="#dd8452")
    axis.set_xlabel("wall seconds per query")
    axis.set_ylabel("queries")
    median = sorted(walls)[len(walls) // 2]
    axis.set_title(f"Latency per query (median {median:.3g} s, max {max(walls):.3g} s)", fontsize=9)
    return _png(figure)


def run_figures(run: RunData) -> list[tuple[str, bytes | None, str]]:
    """(title, PNG or None, why there is none) for one run's page."""
    return [
        ("Pass rate per group", pass_rate([run]), pass_rate_why([run])),
        ("Error kinds per group", error_kinds(run), "at most one kind of parse error or abnormal status code"),
        ("Steps per query", steps_per_query(run), "every query made the same number of model calls"
         if any(q.model_calls is not None for q in run.queries) else "no per-query model-call counts"),
        ("Latency", latency(run), "fewer than two distinct query times"
         if any(q.stats.get("wall_seconds") is not None for q in run.queries)
         else "no queries.jsonl (timings are written by `tba run`)"),
    ]
