"""tba report: one self-contained HTML page for a run, or for a comparison of runs."""

from __future__ import annotations

import argparse

HELP = """\
Write one static HTML file (no server, no external assets; open it in any browser) that shows a run the
way a person debugs it. The first screen: the run's name, model, method, dialect / parser and judge; the
headline (SoPR upstream and strict with n of N, valid answers, infrastructure failures); then the query
table (outcome, win, valid, judge label or "unjudged", calls, error kinds, status codes). Opening a query
shows its trajectory: per model call the prompt sent (reconstructed from the answer file through the run's
dialect, folded), tokens and latency (where the run recorded them), each step's raw output and the
parser's reading of it (thought, call, arguments, error kind, JSON rung) with the failing region
highlighted, each tool call's status code, HTTP status, reply kind, attempts and latency, the observation,
the final answer and the judge labels with their reasons. The labels are one evaluation's (tba evaluate keeps
each judge's apart): the latest complete one unless --judge-id names another; the first screen names it, warns
when a later evaluation failed (it replaced nothing) and when the run's own model judged it (self-judged). Previous / next buttons and the keys j / k
(or the arrow keys) walk the filtered list; Esc closes. Set-up details (manifest, leaderboard, error
taxonomy with links to the queries behind each count, figures) fold below; a figure with one bar is left
out.

Filters (group, label, error kind, status code) and a text search over queries, raw outputs and
observations; the view is kept in the URL hash, e.g. report.html#group=G1_instruction&error=invalid_json.

With --compare RUN_DIR... the page also compares the runs per query (outcome / win / valid / label / calls
side by side, disagreements first): different models, or parser variants over the same queries. Queries
that one run lacks are counted apart ("missing from a run"), not as differing outcomes.

With --index DIR (no RUN_DIR): the front page of a sweep. Every run folder under DIR gets its page
(RUN/report.html) and one line on DIR/index.html (or --out): model, method, date, headline scores, a link.
A sweep's folder (OUT/NAME with the sweep.json `tba sweep` writes): the page starts with the sweep's matrix
(one row per cell and judge, as OUT/NAME/matrix.md), each cell's name a link to its run page.

RUN_DIR is a folder written by `tba run` (evaluated or not), or any folder of upstream answer files
{group}/{qid}_{method}.json (then pass --parser to re-parse raw text outputs)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="self-contained HTML report of a run (or a comparison)",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", metavar="RUN_DIR", nargs="?", default=None,
                        help="a run folder (tba run) or a folder of answer files")
    parser.add_argument("--index", default=None, metavar="DIR",
                        help="instead of RUN_DIR: a page per run folder under DIR and an index page linking them")
    parser.add_argument("--compare", nargs="+", default=[], metavar="RUN_DIR",
                        help="more run folders to compare with RUN_DIR, query by query")
    parser.add_argument("--out", default=None, metavar="FILE.html",
                        help="the HTML file to write (default: RUN_DIR/report.html, with --compare "
                        "RUN_DIR/compare.html; with --index: DIR/index.html)")
    parser.add_argument("--parser", default=None,
                        help="parser used to re-read raw outputs (default: the one in each run's manifest)")
    parser.add_argument("--title", default=None, help="page title (default: from the run names)")
    parser.add_argument("--judge-id", default=None, metavar="ID",
                        help="the evaluation to show (its folder under RUN/eval; a unique start is enough). Default: "
                        "the latest complete one (tba evaluate keeps each judge's apart); none complete: the latest")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from toolbench_adapter.errors import InputError
    from toolbench_adapter.report.html import write_report

    if args.out is not None and not args.out.endswith((".html", ".htm")):
        raise InputError("the report is one HTML file", field="--out", fix="name it e.g. report.html")
    if args.index is not None:
        if args.run_dir or args.compare:
            raise InputError("--index makes the pages of every run under a folder", field="--index",
                             fix="give either RUN_DIR [--compare ...] or --index DIR, not both")
        return _index(args)
    if args.run_dir is None:
        raise InputError("no run folder given", field="RUN_DIR",
                         fix="tba report RUN_DIR (a folder tba run or make eval wrote, e.g. results/runs/NAME), or "
                         "tba report --index DIR for every run under DIR")
    # the page beside the run, as --index and make report write it (was: "nothing to report" without --out)
    out = args.out or str(Path(args.run_dir) / ("compare.html" if args.compare else "report.html"))
    path = write_report([args.run_dir, *args.compare], out, parser=args.parser, title=args.title,
                        judge_id=args.judge_id)
    size = path.stat().st_size
    print(f"written: {path} ({size / 1e6:.2f} MB); open it in a browser")
    return 0


def _index(args: argparse.Namespace) -> int:
    import sys

    from toolbench_adapter.report.run_index import write_index

    path, entries = write_index(args.index, args.out, parser=args.parser)
    for entry in entries:
        if entry.problem:
            print(f"warning: {entry.path}: not readable ({entry.problem}); listed as such", file=sys.stderr)
    pages = sum(entry.page is not None for entry in entries)
    print(f"written: {path} ({len(entries)} runs, {pages} run pages as RUN/report.html); open it in a browser")
    return 0
