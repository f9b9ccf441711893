"""tba report: one self-contained HTML page for a run, or for a comparison of runs."""

from __future__ import annotations

import argparse

HELP = """\
Write one static HTML file (no server, no external assets; open it in any browser) that shows a run the
way a person debugs it: the run manifest, the leaderboard row (when the run was evaluated), the error
taxonomy with counts that link to the queries behind them, figures (pass rate per group with std bars,
error kinds per group, steps per query, latency), and every query's trajectory: each step's raw model
output, its parse (thought, call, arguments, error kind, JSON rung) with the failing region highlighted,
the observation and status code, the final answer and the judge labels with their reasons.

Filters (group, label, error kind, status code) and a text search over queries, raw outputs and
observations; the view is kept in the URL hash, e.g. report.html#group=G1_instruction&error=invalid_json.

With --compare RUN_DIR... the page also compares the runs per query (win / valid / label / calls side by
side, disagreements first): different models, or parser variants over the same queries.

RUN_DIR is a folder written by `tba run` (evaluated or not), or any folder of upstream answer files
{group}/{qid}_{method}.json (then pass --parser to re-parse raw text outputs)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("report", help="self-contained HTML report of a run (or a comparison)",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (tba run) or a folder of answer files")
    parser.add_argument("--compare", nargs="+", default=[], metavar="RUN_DIR",
                        help="more run folders to compare with RUN_DIR, query by query")
    parser.add_argument("--out", required=True, metavar="FILE.html", help="the HTML file to write")
    parser.add_argument("--parser", default=None,
                        help="parser used to re-read raw outputs (default: the one in each run's manifest)")
    parser.add_argument("--title", default=None, help="page title (default: from the run names)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.report.html import write_report

    if not args.out.endswith((".html", ".htm")):
        raise InputError("the report is one HTML file", field="--out", fix="name it e.g. report.html")
    path = write_report([args.run_dir, *args.compare], args.out, parser=args.parser, title=args.title)
    size = path.stat().st_size
    print(f"written: {path} ({size / 1e6:.2f} MB); open it in a browser")
    return 0
