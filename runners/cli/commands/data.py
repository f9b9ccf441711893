"""tba data fetch: download (or refresh) the upstream StableToolBench query files."""

from __future__ import annotations

from toolbench_adapter.net.http_session import EnvCachedSession
from toolbench_adapter.protocol.query_files import UPSTREAM_COMMIT
from toolbench_adapter.queryset.datafetch import ANY_COMMIT_FLAG, UPSTREAM_BASE_URL, fetch_queries
from toolbench_adapter.queryset.queries import GROUPS

from ..ranges import SECONDS


def register(subparsers) -> None:
    parser = subparsers.add_parser("data", help="fetch upstream data (needs a network)")
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    sub.required = True
    fetch = sub.add_parser(
        "fetch", help="download the StableToolBench query files (765 solvable test queries)",
        description="Downloads solvable_queries/test_instruction and test_query_ids for each group into OUT, "
        f"pinned to the upstream commit the project was checked against ({UPSTREAM_COMMIT[:7]}; "
        "data/stabletoolbench ships them). Every file is checked before any is written: JSON, and the SHA-256 of "
        "the pinned commit's file. Files already in OUT are kept unless --overwrite (make data refreshes the "
        "shipped ones). Use OUT as --stb-root afterwards.")
    fetch.add_argument("--out", default="data/stabletoolbench", help="target folder (default: data/stabletoolbench)")
    fetch.add_argument("--base-url", default=UPSTREAM_BASE_URL, help="where the repository files are served from")
    fetch.add_argument("--groups", nargs="+", default=list(GROUPS), help="groups to fetch (default: all six)")
    fetch.add_argument("--overwrite", action="store_true",
                       help="replace files that are already there (once every new file has passed the checks)")
    fetch.add_argument(ANY_COMMIT_FLAG, action="store_true",
                       help=f"take files whose digest is not {UPSTREAM_COMMIT[:7]}'s (another commit): checked as JSON "
                       "only; their numbers are then not on StableToolBench's 765 queries")
    fetch.add_argument("--timeout", type=SECONDS, default=60.0, metavar="S",
                       help="seconds one file's whole download may take (connect, headers and body; default 60)")
    fetch.set_defaults(func=run_fetch)


def run_fetch(args) -> int:
    result = fetch_queries(args.out, base_url=args.base_url, groups=args.groups, overwrite=args.overwrite,
                           any_commit=args.any_commit, timeout=args.timeout, session=EnvCachedSession())
    total = len(result.written) + len(result.kept)
    print(f"wrote {len(result.written)} file(s) under {args.out}"
          + (f"; kept {len(result.kept)} already there (--overwrite replaces them)" if result.kept else "")
          + f"; {result.pinned} of {total} are StableToolBench @ {UPSTREAM_COMMIT[:7]}'s files byte for byte"
          + f"; use --stb-root {args.out}")
    return 0
