"""tba queries: counts per group, or one query."""

from __future__ import annotations

import json

from toolbench_adapter.queryset.queries import QuerySet

from ._common import add_stb_root, stb_root_arg


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "queries", help="count the evaluated queries per group, or show one query",
        description="Without --group: evaluated queries per group (only ids listed in test_query_ids count). "
        "With --group: its query ids. With --group and --query-id: that query as JSON.")
    add_stb_root(parser)
    parser.add_argument("--group", help="a group name, e.g. G1_instruction")
    parser.add_argument("--query-id", help="a query id of that group")
    parser.set_defaults(func=run)


def run(args) -> int:
    queries = QuerySet(stb_root_arg(args))
    if args.query_id is not None and not args.group:
        from toolbench_adapter.errors import InputError
        raise InputError("--query-id needs --group", field="--group", fix="add --group GROUP")
    if args.group and args.query_id is not None:
        print(json.dumps(queries.get(args.group, args.query_id).raw, indent=2, ensure_ascii=False))
        return 0
    if args.group:
        for query in queries.load(args.group):
            print(query.query_id)
        return 0
    counts = queries.counts()
    width = max(len(g) for g in counts) if counts else 5
    print(f"# {queries.root}")
    for group, count in counts.items():
        print(f"{group:<{width}}  {count:>4}")
    print(f"{'total':<{width}}  {sum(counts.values()):>4}")
    return 0
