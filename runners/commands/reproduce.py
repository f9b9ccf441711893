"""tba reproduce: recompute SoPR / SoWR from StableToolBench's released label files and print them."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.reproduce import report_text, reproduce
from toolbench_adapter.evaluation.results import write_score_file
from toolbench_adapter.report.tables import build_leaderboards, to_markdown

HELP = """\
Recompute the pass rate (SoPR) and win rate (SoWR) from the label files that StableToolBench released under
data_example/pass_rate_results (upstream JSON and tab-separated CSV with dict-strings) and
data_example/preference_results, and print them. SoPR is shown as upstream computes it (denominator =
answered queries) and strict (denominator = the test-id set; missing answers Unsolved); SoWR as upstream
(ties count 0) and corrected (ties count half)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("reproduce", help="recompute SoPR/SoWR from released label files",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stb-root", default=None, metavar="DIR",
                        help="StableToolBench checkout holding data_example/ (default: $TBA_STB_ROOT)")
    parser.add_argument("--test-ids", default=None, metavar="DIR",
                        help="test-id folder for strict SoPR (default: solvable_queries_example/test_query_ids "
                        "of the checkout, else solvable_queries/test_query_ids)")
    parser.add_argument("--leaderboard", action="store_true",
                        help="also print the reproduced rows as leaderboard tables (Markdown)")
    parser.add_argument("--out", default=None, metavar="FILE", help="also write the rows as a score file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = args.stb_root or os.environ.get("TBA_STB_ROOT")
    if not root:
        raise InputError("no StableToolBench checkout given", fix="pass --stb-root DIR or set TBA_STB_ROOT")
    result = reproduce(Path(root), args.test_ids)
    print(report_text(result), end="")
    if args.leaderboard:
        for board in build_leaderboards(result.json_rows):
            print()
            print(to_markdown(board), end="")
    if args.out:
        write_score_file(args.out, result.json_rows)
        print(f"\nscore file: {args.out}")
    return 0
