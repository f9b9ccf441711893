"""``tba report --index DIR``: the front page of a sweep. Every run folder under DIR (a folder holding a
``manifest.json``) gets its own report page (``RUN/report.html``) and one line on the index: run, model,
method, dialect / parser, date, headline scores with n of N, valid answers, infrastructure failures. When DIR
holds a ``sweep.json`` (`tba sweep`), the page starts with the sweep's matrix (sweep_matrix.py), each cell's name
a link to its run page.

The index is static HTML (no script): it is a list of links and numbers, nothing to filter.
"""

from __future__ import annotations

import datetime
import html
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import toolbench_adapter

from ..errors import InputError
from ..evaluation.comparability import AS_DECLARED_VERDICT, YES, kind_of_line
from ..evaluation.storage import write_text_atomic
from ..runs.trial_set import is_trial_set
from .headline import facts, headline
from .html import _asset, render_page
from .run_data import MANIFEST, load_run
from .sweep_matrix import Matrix, build_matrix
from .sweep_matrix_render import to_html
from .sweep_record import SWEEP_FILE

RUN_PAGE = "report.html"
MAX_DEPTH = 4  # sweeps nest runs a few folders down (results/runs/{sweep}/{model}/{run})


@dataclass
class IndexEntry:
    path: Path
    page: Path | None
    facts: dict
    headline: dict
    problem: str | None = None  # why the run could not be read (listed, not hidden)


def find_runs(root: Path) -> list[Path]:
    """Folders under ``root`` (itself included) holding a manifest.json, or a set of trials (its trials.json: one
    page for the set, tba run --trials), sorted by path; no descent into a run or a set."""
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        if (folder / MANIFEST).is_file() or is_trial_set(folder):
            found.append(folder)
            return
        if depth >= MAX_DEPTH:
            return
        for child in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
            walk(child, depth + 1)

    walk(root, 0)
    return found


def write_index(root: str | Path, out: str | Path | None = None, parser: str | None = None) -> tuple[Path, list]:
    """Write every run's page and the index; returns (index path, entries)."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("folder not found", path=root, field="--index", fix="pass a folder that holds run folders, e.g. results/runs (`tba run` writes them "
                         "there; or run `make eval` first)")
    matrix = build_matrix(root) if (root / SWEEP_FILE).is_file() else None  # a bad sweep.json: exit 2 first
    runs = find_runs(root)
    if not runs:
        raise InputError("no run folder (with a manifest.json) under this folder", path=root, field="--index",
                         fix="pass the folder your `tba run --out-root` wrote to, e.g. results/runs")
    out = Path(out) if out else root / "index.html"
    entries: list[IndexEntry] = []
    for run_dir in runs:
        try:
            run = load_run(run_dir, parser=parser)
        except InputError as exc:
            entries.append(IndexEntry(run_dir, None, {}, {}, problem=str(exc)))
            continue
        page = run_dir / RUN_PAGE
        write_text_atomic(page, render_page([run]))
        os.chmod(page, 0o644)
        entries.append(IndexEntry(run_dir, page, facts(run), headline(run)))
    if not any(entry.page for entry in entries):
        raise InputError(f"no run under this folder could be read ({entries[0].problem})", path=root,
                         field="--index", fix="check the run folders listed, or point --index at another folder")
    title = f"tba report: sweep {matrix.name} ({root})" if matrix else f"tba report: runs under {root}"
    write_text_atomic(out, render_index(entries, out.parent, title=title, matrix=matrix))
    os.chmod(out, 0o644)
    return out, entries


def matrix_html(matrix: Matrix | None, entries: list[IndexEntry], base: Path) -> str:
    """The sweep's matrix, each cell's name linking to the page written for its run folder."""
    if matrix is None:
        return ""
    pages = {entry.path.resolve(): entry.page for entry in entries if entry.page}
    links = {row.cell: quote(os.path.relpath(pages[row.run_dir.resolve()], base).replace(os.sep, "/"))
             for row in matrix.rows if row.run_dir is not None and row.run_dir.resolve() in pages}
    return to_html(matrix, links) + "\n<h2>Run folders</h2>\n"


def render_index(entries: list[IndexEntry], base: Path, title: str, matrix: Matrix | None = None) -> str:
    head = ["run", "model", "method", "dialect / parser", "date", "SoPR upstream", "SoPR strict",
            "valid", "infrastructure failures", "queries", "StableToolBench leaderboard"]
    rows = []
    for entry in entries:
        name = html.escape(entry.path.name)
        if entry.problem:
            rows.append(f'<tr class="problem"><td>{name}</td><td colspan="{len(head) - 1}">not readable: '
                        f'{html.escape(entry.problem)}</td></tr>')
            continue
        link = html.escape(os.path.relpath(entry.page, base).replace(os.sep, "/"))
        f, h = entry.facts, entry.headline
        cells = [f'<a href="{link}">{name}</a>', _text(f.get("model")), _text(f.get("method")),
                 _text(f"{f.get('dialect') or 'unknown'} / {f.get('parser') or 'unknown'}"), _text(f.get("date")),
                 _score(h, "upstream"), _score(h, "strict"), f'{h["valid"]} / {h["queries"]}', _infra(h),
                 str(h["queries"]), _comparable(h.get("comparability"))]
        classes = ["", "model"] + [""] * (len(cells) - 2)
        rows.append('<tr class="run">' + "".join(f'<td class="{k}">{c}</td>' if k else f"<td>{c}</td>"
                                                  for k, c in zip(classes, cells, strict=True)) + "</tr>")
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    table = ('<table class="queries index"><tr>' + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"
             + "\n".join(rows) + "</table>")
    return INDEX_TEMPLATE.format(title=html.escape(title), css=_asset("report.css"), count=len(entries),
                                 table=matrix_html(matrix, entries, base) + table,
                                 meta=html.escape(f"Generated {stamp} by toolbench-adapter "
                                                  f"{toolbench_adapter.__version__}"))


def _text(value) -> str:
    return html.escape(str(value)) if value not in (None, "") else '<span class="muted">unknown</span>'


def _score(h: dict, mode: str) -> str:
    score = h["sopr"].get(mode)
    if not score:
        return '<span class="muted">unjudged</span>'
    # † (headline.incomplete): failed judgements left out, or an evaluation that is not complete; why on hover
    text = html.escape(score["text"]) + (f' <span title="{html.escape(score["markWhy"])}">{score["mark"]}</span>'
                                         if score.get("mark") else "")
    if mode == "strict":  # n of N = test ids with an answer file of the whole test set (counts.DEFINITIONS)
        return (f'{text} <span class="muted">({score["n"] - score["missing"]} of '
                f'{score["n"]} test ids with an answer file)</span>')
    return f'{text} <span class="muted">({score["n"]} of {score["N"]})</span>'


def _comparable(line: str | None) -> str:
    """"comparable", "comparable as declared" or "not comparable" with what stays declared or fails
    (evaluation/comparability.py)."""
    kind = kind_of_line(line)
    if kind is None:
        return '<span class="muted">not recorded</span>'
    if kind == YES:
        return "comparable"
    word = "comparable as declared" if kind == AS_DECLARED_VERDICT else "not comparable"
    return f'{word} <span class="muted">({html.escape(line.split(": ", 1)[-1])})</span>'


def _infra(h: dict) -> str:
    if h["outcome_unknown"] == h["queries"]:
        return '<span class="muted">unknown (older run)</span>'
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(h["infra_kinds"].items()))
    return f'{h["infra"]}' + (f' <span class="muted">({html.escape(kinds)})</span>' if kinds else "")


INDEX_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="toolbench-adapter tba report --index">
<title>{title}</title>
<style>
{css}
</style>
</head>
<body>
<header id="top"><h1>{title}</h1><p class="meta">{meta} · {count} runs · each name opens that run's page</p></header>
<main id="main">
{table}
<p class="meta">SoPR upstream: (n of N) = queries judged of the queries run (denominator: the queries with an
answer file, as StableToolBench). SoPR strict: (n of N test ids) = test ids with an answer file of the whole test
set, a missing answer counting Unsolved. "Answered" elsewhere: a valid answer whose final answer is a give_answer. Infrastructure failures: queries stopped by the model endpoint, the tool server, a replay gap
or the harness, not by the model.</p>
</main>
</body>
</html>
"""
