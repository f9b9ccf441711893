"""``tba cache build``: answer files -> a response cache in the upstream layout, for exact replay."""

from __future__ import annotations

import argparse
import json
import sys

HELP = """\
Turn answer files (released StableToolBench answers or ours; CoT and DFS; old function_call and new
tool_calls messages) into a cache in StableToolBench's layout, so the run replays against `tba serve`.
Queries not in StableToolBench's set are read from --queries or from the answer file itself (its query and
function list); such a query has no category, so its calls are keyed under answer_{digest of the file}, the
same key `tba replay` uses. Only observations that replay byte for byte are cached. Observations stored cut at 1024 characters are
rebuilt (open strings and brackets closed) when cutting the rebuilt answer again gives the same bytes; they
are exact at the default max_observation_length (1024, a run config's setting) only, and counted as reconstructed_truncated. Finish,
status-1 calls and client-made errors are skipped and counted. Build one cache per run: two runs
that recorded different answers for the same call conflict (the first read wins; the count is printed).

A file that cannot be used (not JSON, nested deeper than the parser follows, a node, message or call of
the wrong shape, a function or tool name with '..' or '/', which never becomes a path, a query no query
set holds) is refused with its path, field and reason; the other files are cached and the command exits 3
with the count of refused files. Exits 2, writing nothing, when no file could be used."""

EXIT_REFUSED_FILES = 3


def register(subparsers) -> None:
    parser = subparsers.add_parser("cache", help="response cache tools (build from answer files)",
                                   description="Response cache tools.")
    sub = parser.add_subparsers(dest="cache_command", metavar="ACTION")
    sub.required = True
    build = sub.add_parser("build", help="answer files -> cache", description=HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    build.add_argument("--answers", nargs="+", required=True, metavar="FILE_OR_DIR",
                       help="answer files or folders (every *.json below them), in any layout: the query id and "
                       "method come from the file name ({query_id}_{method}.json, ..._81506_CoT@1.json), the group "
                       "from a folder or name that contains one")
    build.add_argument("--queries", default=None, metavar="FILE",
                       help="ToolBench-style query file (a JSON list of {query, query_id, api_list}) for answers "
                       "whose query is not in StableToolBench's set")
    build.add_argument("--stb-root", default=None, metavar="DIR",
                       help="StableToolBench checkout (solvable_queries/) to find each answer's query. Default: "
                       "$TBA_STB_ROOT, else the sample set in data/")
    build.add_argument("--out", required=True, metavar="DIR",
                       help="cache folder to create or merge into (existing entries are kept)")
    build.set_defaults(func=run_build)


def run_build(args: argparse.Namespace) -> int:
    from toolbench_adapter.files.fileio import check_writable
    from toolbench_adapter.server.cache_build import build_cache, refusal_line

    check_writable(args.out)  # an unwritable --out is exit 2 before the answers are read
    report = build_cache(args.answers, args.stb_root, args.out, queries_file=args.queries)
    summary = report.as_dict()
    refused = summary.pop("refused_files")
    print(json.dumps(summary, indent=2))
    for item in refused:  # files that were not used, each with its reason
        print(f"refused {refusal_line(item)}", file=sys.stderr)
    if refused:
        counts = ", ".join(f"{reason} {n}" for reason, n in sorted(summary["skipped_files"].items()))
        print(f"REFUSED {len(refused)} of {len(refused) + report.answer_files} answer files ({counts}): their "
              f"calls are not in {args.out}", file=sys.stderr)
        return EXIT_REFUSED_FILES
    return 0
