"""tba functions: the function list of one query, exactly as it would be sent."""

from __future__ import annotations

from toolbench_adapter.compat import Compat
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import FLAVOURS, build_toolset, functions_json

from ._common import add_compat, add_stb_root, stb_root_arg


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "functions", help="print a query's function list as JSON, exactly as it would be sent",
        description="Prints the functions (Finish last) built from the query's api_list. --flavour legacy is "
        "the bare function dicts of every released answer file; current wraps each as "
        '{"type": "function", ...} with the leading "" in required/optional, as StableToolBench code does now.')
    add_stb_root(parser)
    parser.add_argument("--group", required=True, help="group name, e.g. G1_instruction")
    parser.add_argument("--query-id", required=True, help="query id within the group")
    parser.add_argument("--flavour", choices=FLAVOURS, default="legacy", help="function format (default: legacy)")
    add_compat(parser)
    parser.add_argument("--routes", action="store_true",
                        help="print each function's server route (category, tool, api) instead")
    parser.set_defaults(func=run)


def run(args) -> int:
    query = QuerySet(stb_root_arg(args)).get(args.group, args.query_id)
    toolset = build_toolset(query, args.flavour, Compat.from_mode(args.compat), tool_root=args.tool_root)
    if args.routes:
        import json
        print(json.dumps({name: vars(route) for name, route in toolset.routes.items()}, indent=2))
    else:
        print(functions_json(toolset))
    return 0
