"""tba serve-tools: each selected query's world over MCP for use by hand (any MCP client: an IDE, an SDK, curl)."""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import replace

from toolbench_adapter.errors import InputError

HELP = """\
Serve each selected query's tools over MCP (streamable HTTP, one URL per query, printed on stderr as it opens;
or --stdio for one query over stdin/stdout) and record what a client does with them as a run: every call and
reply in steps.jsonl, and at the query's Finish (or when this command stops: Ctrl-C, or stdin closed) its
answer file and queries.jsonl line, so tba evaluate, table, report and compare-runs read the folder as any
run's. The tools are the functions the function-call run sends (Finish last), answered by the embedded tool
server (cache, then --simulator) with a run's status codes and observations; --max-step caps the calls.

examples:
  tba serve-tools --name by-hand --groups G1_instruction --query-ids 900001      # one URL, Ctrl-C to end
  tba serve-tools --name by-hand-stdio --query-ids 900001 --stdio               # for a client that spawns servers
Takes tba run's selection and tool-server flags (tba run --help)."""

AGENT = "by-hand-via-tba-serve-tools"  # the agent a run folder names: a person's MCP client


def register(subparsers) -> None:
    from .run import add_run_arguments

    p = subparsers.add_parser("serve-tools", help="serve each query's tools over MCP for use by hand (recorded as a run)",
                              description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(p, fanout=False)
    p.add_argument("--stdio", action="store_true", help="one query over stdin/stdout (the MCP stdio transport)")
    p.set_defaults(func=serve_tools)


def serve_tools(args) -> int:
    from ...config import select_queries
    from ...execution.runner import Runner
    from ...outside.drive import ByHand, Stdio
    from .run import EXIT_INFRA_FAILURES, config_from_args, stopping_now_exits, summary_lines

    if args.agent:
        raise InputError("tba serve-tools serves a person's MCP client; --agent runs a program", field="agent",
                         fix="use tba run --agent CMD for a program, or leave --agent out")
    args.agent = AGENT
    cfg = config_from_args(args)
    count = len(select_queries(cfg))
    if args.stdio and count != 1:
        raise InputError(f"--stdio serves one query; the selection holds {count}", field="query_ids",
                         fix="select one query, e.g. --groups G1_instruction --query-ids 900001")
    if args.concurrency is None:  # every session open at once: a person picks which to use
        cfg = replace(cfg, concurrency=max(1, min(count, 64)))
    redo = "tba " + shlex.join(getattr(args, "argv", None) or ["serve-tools", "--name", cfg.name])
    from ...models.outside_agent import OutsideAgentBackend

    runner = Runner(cfg, backend=OutsideAgentBackend(model=AGENT), progress=False, command=redo,
                    outside=Stdio() if args.stdio else ByHand())
    with stopping_now_exits(redo):
        manifest = runner.run()
    print("\n".join(summary_lines(manifest, str(cfg.run_dir), redo)), file=sys.stderr if args.stdio else sys.stdout)
    return EXIT_INFRA_FAILURES if manifest["totals"]["infra_failures"] else 0
