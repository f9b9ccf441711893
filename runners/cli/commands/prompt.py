"""tba prompt: the exact first prompt of one query in a dialect."""

from __future__ import annotations

import json

from toolbench_adapter.compat import Compat
from toolbench_adapter.dialects import DIALECTS, make_dialect
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import FLAVOURS, build_toolset

from ._common import add_compat, add_stb_root, parse_options, stb_root_arg


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "prompt", help="print the exact first prompt of a query in a dialect",
        description="Text dialects print the prompt text as sent (toolllama: System/User roles, the function "
        "list as a Python repr, closing 'Assistant:\\n'); chat dialects print the JSON request body parts.")
    add_stb_root(parser)
    parser.add_argument("--group", required=True)
    parser.add_argument("--query-id", required=True)
    parser.add_argument("--dialect", default="toolllama", help=f"one of: {', '.join(DIALECTS.names())}")
    parser.add_argument("--flavour", choices=FLAVOURS, default="legacy")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="dialect option, e.g. history=thought, template=chat, prefill='Thought: ', example=true")
    add_compat(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    query = QuerySet(stb_root_arg(args)).get(args.group, args.query_id)
    toolset = build_toolset(query, args.flavour, Compat.from_mode(args.compat), tool_root=args.tool_root)
    dialect = make_dialect(args.dialect, **parse_options(args.option))
    rendered = dialect.render(initial_messages(toolset), toolset)
    if rendered.prompt is not None:
        print(rendered.prompt + rendered.prefill, end="")
    else:
        body = {"messages": rendered.messages}
        if rendered.tools:
            body["tools"] = rendered.tools
        print(json.dumps(body, indent=2, ensure_ascii=False))
    return 0
