"""``tba report``: one self-contained static HTML page per run, or per comparison of runs.

The page holds everything inline: CSS, a small vanilla JS renderer, figures as base64 PNG, a summary of
every query as one JSON block, and each query's trajectory as its own JSON block that the page parses only
when the query is opened (a 765-query DFSDT run stays quick to open). Filters and the opened query live in
the location hash (``#group=G1_instruction&error=invalid_json&q=weather``) so a view can be linked to.
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import os
from collections import Counter
from importlib import resources
from itertools import pairwise
from pathlib import Path

import toolbench_adapter

from ..evaluation.evaluations import default_evaluation, is_self_judged_label
from ..evaluation.storage import write_text_atomic
from ..protocol.env import STATUS_NAMES
from . import axes, plots
from .headline import facts, headline
from .run_compare import compare_runs, summary
from .run_data import RunData, load_run
from .taxonomy import NO_CALL
from .trajectories import final_answer_text

ASSETS = "html_assets"


def build_report(run_dirs: list[str | Path], parser: str | None = None, title: str | None = None,
                 judge_id: str | None = None) -> str:
    """The page for one run, or for a comparison when several run folders are given. ``judge_id``: the
    evaluation to show of each run (default: each run's latest complete one)."""
    runs = [load_run(path, parser=parser, judge_id=judge_id) for path in run_dirs]
    _unique_names(runs)
    return render_page(runs, title=title)


def write_report(run_dirs: list[str | Path], out: str | Path, parser: str | None = None,
                 title: str | None = None, judge_id: str | None = None) -> Path:
    page = build_report(run_dirs, parser=parser, title=title, judge_id=judge_id)
    out = Path(out)
    write_text_atomic(out, page)
    os.chmod(out, 0o644)  # the temp file was private; a report is meant to be shared
    return out


def render_page(runs: list[RunData], title: str | None = None) -> str:
    title = title or (f"tba report: {runs[0].name}" if len(runs) == 1
                      else "tba report: " + " vs ".join(run.name for run in runs))
    details: list[str] = []
    payload = {
        "title": title,
        "statusNames": {str(code): name for code, name in STATUS_NAMES.items()},
        "runs": [_run_payload(index, run, details) for index, run in enumerate(runs)],
        "compare": _compare_payload(runs) if len(runs) > 1 else None,
    }
    template = _asset("page.html")
    values = {
        "@@TITLE@@": html.escape(title),
        "@@GENERATED@@": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "@@VERSION@@": html.escape(f"toolbench-adapter {toolbench_adapter.__version__}"),
        "@@CSS@@": _asset("report.css"),
        "@@JS@@": _asset("report.js"),
        "@@DATA@@": script_json(payload),
        "@@DETAILS@@": "\n".join(details),
    }
    for marker in ("@@TITLE@@", "@@GENERATED@@", "@@VERSION@@", "@@CSS@@", "@@JS@@", "@@DETAILS@@", "@@DATA@@"):
        template = template.replace(marker, values[marker])  # data last: it may contain anything
    return template


def script_json(value) -> str:
    """JSON safe inside <script>: every "<" is escaped, so no "</script>" or "<!--" can end the block."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(ASSETS, name).read_text(encoding="utf-8")


def _unique_names(runs: list[RunData]) -> None:
    """Two folders with the same name (parser variants under different roots) get their index appended."""
    counts = Counter(run.name for run in runs)
    for index, run in enumerate(runs):
        if counts[run.name] > 1:
            run.name = f"{run.name} [{index + 1}]"


def _run_payload(index: int, run: RunData, details: list[str]) -> dict:
    groups = run.groups
    group_index = {g: i for i, g in enumerate(groups)}
    queries = []
    for number, query in enumerate(run.queries):
        stats = query.stats
        entry = {"g": group_index[query.group], "id": query.query_id, "m": query.method, "q": query.query,
                 "win": int(query.win), "valid": int(query.valid), "label": query.label, "labels": query.labels,
                 "reasons": query.reasons, "calls": query.model_calls, "tok": stats.get("total_tokens"),
                 "wall": stats.get("wall_seconds"), "err": query.error_kinds,
                 "st": sorted(query.statuses, key=lambda s: (isinstance(s, str), s)),
                 "fa": final_answer_text(query.final_answer), "ft": query.finish_type, "o": query.outcome}
        if query.failure_kind:
            entry["fk"], entry["fd"] = query.failure_kind, query.failure_detail
        if run.trial_set is not None:  # a set of trials: "Solved in 2 of 3 trials" (run_trials.py)
            entry["tr"] = run.trial_set.solved_text(query.group, query.query_id) or "not judged"
        for key, name in (("ms", "model_seconds"), ("es", "env_seconds")):
            if stats.get(name) is not None:
                entry[key] = stats[name]
        queries.append(entry)
        # "prompts" after "nodes" and "fa_raw": the page's search reads the block's text up to that key
        block = {"nodes": query.nodes, "fa_raw": query.final_answer, "prompts": query.prompts, "calls": query.calls}
        details.append(f'<script type="application/json" id="d{index}_{number}">{script_json(block)}</script>')
    errors, error_queries, status, status_queries = _taxonomy(run)
    return {
        "name": run.name, "path": str(run.path), "parser": run.parser, "notes": run.notes,
        "facts": facts(run), "headline": headline(run), "judgeFailures": list(run.failed_judgements()),
        "labelCounts": labels.as_dict() if (labels := run.label_counts()) else None,
        "evaluation": _evaluation_payload(run),
        "manifest": run.manifest, "judges": run.judges, "labelFiles": run.label_files, "groups": groups,
        "boards": [{"caption": b.caption, "comparability": b.comparability_lines + b.judge_card_lines, "header": b.header(),
                    "rows": b.body(), "footnote": b.footnote}
                   for b in run.boards()],
        "tax": {"errors": errors, "errorQueries": error_queries, "status": status, "statusQueries": status_queries},
        "errorKinds": sorted(error_queries),
        "statusCodes": sorted({s for q in run.queries for s in q.statuses}, key=lambda s: (isinstance(s, str), s)),
        "figs": [_figure(title, png, why) for title, png, why in plots.run_figures(run)],
        "queries": queries,
    }


def _evaluation_payload(run: RunData) -> dict | None:
    """Which evaluation the page shows and why, whether its judge was the run's own model, and the evaluations
    that failed after it (kept apart: evaluations.py), for the first screen."""
    chosen = run.evaluation
    if chosen is None:
        return None
    default = default_evaluation(run.evaluations)
    # without --judge-id the page shows the default, or (none complete) the latest: anything else was asked for
    why = ("the latest complete evaluation" if chosen is default else
           "no evaluation is complete: the latest" if default is None and chosen is run.evaluations[-1] else
           "chosen with --judge-id")
    later = [{"id": r.id, "summary": r.summary()} for r in run.evaluations
             if not r.complete and r is not chosen and r.finished >= chosen.finished]
    return {"id": chosen.id, "status": chosen.status, "judge": chosen.judge, "why": why,
            "model": (chosen.data.get("judge") or {}).get("model"),
            "selfJudged": chosen.self_judged or any(is_self_judged_label(judge) for judge in run.judges),
            "selfJudgedHow": self_judged_how(chosen.data),
            "count": len(run.evaluations), "laterFailed": later,
            "others": [r.summary() for r in run.evaluations if r is not chosen]}


def self_judged_how(evaluation: dict) -> str:
    """What the user did that made the run's own model its judge, from the evaluation's record (its command and
    judge): the banner used to cite --judge-self to someone who never passed it (make eval JUDGE=self passes
    --judge=self; the offline default's local judge runs the run's own weights unasked)."""
    command = str(evaluation.get("command") or "")
    words = command.split()
    judge = evaluation.get("judge") or {}
    if "--judge-self" in words:
        return f"asked for with --judge-self: {command}"
    if "--judge=self" in words or ("--judge", "self") in pairwise(words):
        return f"asked for with JUDGE=self (make) or --judge self: {command}"
    if judge.get("note"):
        return f"the local judge {judge.get('model') or ''} runs the same weights as the run's model, unasked: " \
               f"{judge.get('note')}".replace("  ", " ")
    return "the judge serves the run's own model (the same name, or the same weights under another name)" + (
        f": {command}" if command else "")


def _taxonomy(run: RunData) -> tuple[dict, dict, dict, dict]:
    """Steps per (kind, group) and queries per kind, for parse error kinds and for status codes."""
    errors: dict[str, dict[str, int]] = {}
    status: dict[str, dict[str, int]] = {}
    error_queries: Counter = Counter()
    status_queries: Counter = Counter()
    for query in run.queries:
        for kind, count in query.errors.items():
            errors.setdefault(kind, Counter())[query.group] += count
            if kind != "none":
                error_queries[kind] += 1
        for code, count in query.statuses.items():
            status.setdefault(str(code), Counter())[query.group] += count
            status_queries[str(code)] += 1
    order = sorted(errors, key=lambda k: (k != "none", k))
    codes = sorted(status, key=lambda c: (c == NO_CALL, int(c) if c.isdigit() else 0))
    return ({k: dict(errors[k]) for k in order}, dict(error_queries),
            {c: dict(status[c]) for c in codes}, dict(status_queries))


def _figure(title: str, png: bytes | None, why: str) -> dict:
    return {"title": title, "png": base64.b64encode(png).decode("ascii") if png else None, "why": why}


def _compare_payload(runs: list[RunData]) -> dict:
    positions = [{q.key: i for i, q in enumerate(run.queries)} for run in runs]
    rows = compare_runs(runs)
    groups = list(dict.fromkeys(g for run in runs for g in run.groups))
    settings = [axes.settings_of(run.manifest) for run in runs]
    judges = [axes.judge_text((run.evaluation.data.get("judge") or {}).get("model"), run.evaluation.judge,
                              run.evaluation.self_judged) if run.evaluation is not None else "not judged"
              for run in runs]
    return {
        "summary": summary(rows),
        # what the runs differ in, named (axes.py), each run's value there, and whose labels each carries
        "axes": [axes.axis_name(a) for a in axes.differing(settings)],
        "settings": [{axes.axis_name(k): str(v) for k, v in s.items()} for s in settings],
        "judges": axes.judges_line(judges),
        "groups": groups,
        "figs": [_figure("Pass rate per group, all runs", plots.pass_rate(runs), plots.pass_rate_why(runs))],
        "rows": [{"g": row.group, "id": row.query_id, "q": row.query, "rank": row.rank,
                  "cells": [None if cell is None else positions[run][cell.key] for run, cell in enumerate(row.cells)]}
                 for row in rows],
    }
