"""tba data fetch: download the upstream StableToolBench query files."""

from __future__ import annotations

from toolbench_adapter.datafetch import UPSTREAM_BASE_URL, fetch_queries
from toolbench_adapter.queries import GROUPS


def register(subparsers) -> None:
    parser = subparsers.add_parser("data", help="fetch upstream data (needs a network)")
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION")
    sub.required = True
    fetch = sub.add_parser(
        "fetch", help="download the StableToolBench query files (765 solvable test queries)",
        description="Downloads solvable_queries/test_instruction and test_query_ids for each group into OUT, "
        "pinned to the upstream commit the project was checked against. Use OUT as --stb-root afterwards.")
    fetch.add_argument("--out", default="data/stabletoolbench", help="target folder (default: data/stabletoolbench)")
    fetch.add_argument("--base-url", default=UPSTREAM_BASE_URL, help="where the repository files are served from")
    fetch.add_argument("--groups", nargs="+", default=list(GROUPS), help="groups to fetch (default: all six)")
    fetch.add_argument("--overwrite", action="store_true", help="replace files that are already there")
    fetch.set_defaults(func=run_fetch)


def run_fetch(args) -> int:
    written = fetch_queries(args.out, base_url=args.base_url, groups=args.groups, overwrite=args.overwrite)
    print(f"wrote {len(written)} file(s) under {args.out}; use --stb-root {args.out}")
    return 0
