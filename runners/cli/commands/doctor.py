"""tba doctor: each piece a run comparable with the StableToolBench leaderboard needs, OK, DECLARED or MISSING."""

from __future__ import annotations

import argparse

from ..ranges import SECONDS

HELP = """\
Checks each piece a run needs for a number that can stand beside the StableToolBench leaderboard, on the evidence
the comparability line reads, and prints one line per piece: OK (verified), DECLARED (there, but named only: what
stands behind the name cannot be checked here), or MISSING with what it is and the command or link that gets it.
  query files      --stb-root (default: $TBA_STB_ROOT, else data/stabletoolbench, shipped): StableToolBench's 765
                   solvable queries, recognised by the SHA-256 of upstream's files
  tool documents   --tool-root (default: $TBA_TOOL_ROOT, else <stb-root>/toolenv/tools): a readable document for
                   every tool the query set uses (n of N, the first missing named); fewer is MISSING
  response cache   --cache: StableToolBench's tool_response_cache, its entries by who made them; entries this
                   project's simulators made (the schema simulator's by content, unmarked simulated ones, another
                   model's) are MISSING ("N of M entries are this project's synthetic answers"); gpt-4-turbo's
                   (this project's prompt) or MirrorAPI's are DECLARED
  simulator        what answers cache misses, as tba serve and tba run take it (--simulator, --llm-*): its endpoint
                   checked as a run checks it (one GET /models lists --llm-model whole), judged by the rule the
                   comparability line uses: OK for the leaderboard's gpt-4-turbo listed by api.openai.com; DECLARED
                   for that name at another host, or MirrorAPI (a name cannot prove its weights); MISSING for
                   another model, the synthetic schema simulator, or MirrorAPI without its system prompt
  judge            --judge-url / --judge-model as tba evaluate takes them: reachable, listing the model id whole,
                   answering one test request (the judge preflight), the leaderboard's judge; DECLARED at an
                   endpoint that is not the provider's own API host (api.openai.com)
Each network check is one request with a --timeout S limit (no retries), so the command ends in bounded time.
Exit 0 when every piece is verified, 1 when one is missing, 4 when all are there but some only declared, 2 on a
bad flag (an unknown simulator)."""

MISSING_EXIT = 1  # a check that found a piece missing: not bad input (2), not failures counted apart (3)
DECLARED_EXIT = 4  # every piece there, some only by name: not 0, which says every piece was verified


def register(subparsers) -> None:
    from toolbench_adapter.doctor import DEFAULT_TIMEOUT_S

    from ._common import add_judge_url, add_simulator_flags

    p = subparsers.add_parser("doctor", help="check each piece a leaderboard-comparable run needs", description=HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stb-root", default=None, metavar="DIR",
                   help="query files (solvable_queries/); default: $TBA_STB_ROOT, else data/stabletoolbench (shipped)")
    p.add_argument("--tool-root", default=None, metavar="DIR",
                   help="tool documents (toolenv/tools); default: $TBA_TOOL_ROOT, else <stb-root>/toolenv/tools")
    p.add_argument("--cache", default=None, metavar="DIR",
                   help="the tool-response cache folder (tba serve --cache, tba run --cache-dir)")
    add_simulator_flags(p, temperature=False)  # as tba serve and tba run take them: one definition
    add_judge_url(p)
    p.add_argument("--judge-model", default=None,
                   help="judge model (default: $TBA_JUDGE_MODEL, else gpt-4o-mini, as tba evaluate)")
    p.add_argument("--judge-api-key", default=None, help="the judge's API key (default: $OPENAI_API_KEY)")
    p.add_argument("--timeout", type=SECONDS, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds for each network check (default {DEFAULT_TIMEOUT_S:g})")
    p.set_defaults(func=run, judge_backend="openai")


def run(args: argparse.Namespace) -> int:
    from toolbench_adapter.doctor import DoctorSettings, run_checks
    from toolbench_adapter.errors import InputError

    from ._common import judge_model_from_args, judge_urls

    if args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout:g} is not positive", field="--timeout", fix="e.g. --timeout 5")
    settings = DoctorSettings(stb_root=args.stb_root, tool_root=args.tool_root, cache=args.cache,
                              simulator=args.simulator or "schema", llm_base_url=args.llm_base_url,
                              llm_model=args.llm_model or "", llm_api_key_env=args.llm_api_key_env,
                              mirror_system_prompt=args.mirror_system_prompt,
                              judge_urls=judge_urls(args), judge_model=judge_model_from_args(args),
                              judge_api_key=args.judge_api_key, timeout_s=args.timeout)
    checks = run_checks(settings)
    print("What a run comparable with the StableToolBench leaderboard needs:")
    for check in checks:
        print("  " + check.line())
    missing = [check.piece for check in checks if not check.ok]
    declared = [check.piece for check in checks if check.ok and check.declared]
    if missing:
        also = f"; {len(declared)} only declared ({', '.join(declared)})" if declared else ""
        print(f"{len(missing)} of {len(checks)} pieces missing ({', '.join(missing)}){also}: numbers from this setup "
              "are not comparable with the leaderboard")
        return MISSING_EXIT
    if declared:
        print(f"all {len(checks)} pieces are there, {len(declared)} only as declared ({', '.join(declared)}): numbers "
              "from this setup are comparable with the leaderboard as declared, not verified")
        return DECLARED_EXIT
    print(f"all {len(checks)} pieces are there, each verified")
    return 0
