"""``tba cache build``: answer files -> a response cache in the upstream layout, for exact replay."""

from __future__ import annotations

import argparse
import json

HELP = """\
Turn answer files (released StableToolBench answers or ours; CoT and DFS; old function_call and new
tool_calls messages) into a cache in StableToolBench's layout, so the run replays against `tba serve`.
Only observations that replay byte for byte are cached. Observations stored cut at 1024 characters are
rebuilt (open strings and brackets closed) when cutting the rebuilt answer again gives the same bytes; they
are exact at the default --max-observation-length only, and counted as reconstructed_truncated. Finish,
status-1 calls and client-made errors are skipped and counted. Build one cache per run: two runs
that recorded different answers for the same call conflict (the first read wins; the count is printed)."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("cache", help="response cache tools (build from answer files)",
                                   description="Response cache tools.")
    sub = parser.add_subparsers(dest="cache_command", metavar="ACTION")
    sub.required = True
    build = sub.add_parser("build", help="answer files -> cache", description=HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    build.add_argument("--answers", nargs="+", required=True, metavar="DIR",
                       help="answer folders ({group}/{query_id}_{method}.json below them) or files")
    build.add_argument("--stb-root", default=None, metavar="DIR",
                       help="StableToolBench checkout (solvable_queries/) to find each answer's query. Default: "
                       "$TBA_STB_ROOT, else the sample set in data/")
    build.add_argument("--out", required=True, metavar="DIR",
                       help="cache folder to create or merge into (existing entries are kept)")
    build.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from toolbench_adapter.server.cache_build import build_cache

    report = build_cache(args.answers, args.stb_root, args.out)
    print(json.dumps(report.as_dict(), indent=2))
    return 0
