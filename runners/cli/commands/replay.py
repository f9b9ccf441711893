"""``tba replay``: replay answer files (any layout) through the live pipeline and say what came back exactly."""

from __future__ import annotations

import argparse
import json
import sys

from ..ranges import CONCURRENCY

HELP = """\
Replay recorded runs (StableToolBench or ToolBench answer files, CoT or DFSDT, in any folder layout) through
the whole pipeline: a cache is built from the recordings, the embedded server answers from it (no
simulator), the replay backend plays every recorded model turn, and the run's answer files are compared
with the recordings. The dialect comes from the recordings (function-call messages: openai-tools; ReAct
text: toolllama); the query from StableToolBench's set when it holds the same query with the same
function names, else from --queries, else from the answer file itself (no checkout needed).

Writes OUT_ROOT/NAME/: one run folder per method ({method}/{group}/{qid}_{method}.json, manifest, steps),
cache/, input/ (the queries and recordings as replayed) and replay.jsonl, one line per input file:
source, answer (the replayed answer file, or null), actions_recorded, actions_exact (same name and
byte-identical Action Input, in node order), observations_recorded, observations_exact,
final_answer_equal, compat_flags (those an older ToolBench DFSDT recording was replayed with: its own run
folder), differences (each with its kind: api_answered_differently, observation_not_replayable,
function_list_differs, recording_truncated, action_differs, ...), and for a file not replayed its reason.

A file that cannot be used is refused by name, with the field and the reason (not_json; too_deeply_nested:
JSON nested deeper than the parser follows; malformed: a node, message or call of the wrong shape;
unsafe_function_name: a function or tool name with '..' or '/', which never becomes a path; no_query_id,
...), and the other files are replayed.

Exit status: 0 when every input file was replayed; 3 when some were not (unreadable or unusable files,
replay gaps: the per-reason counts are printed); 2 on bad input (nothing found, a bad --queries file)."""


def register(subparsers) -> None:
    parser = subparsers.add_parser("replay", help="replay answer files through the pipeline, compare",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", metavar="FILE_OR_DIR", help="answer files, or folders (every *.json below)")
    parser.add_argument("--name", required=True, help="output folder name under --out-root")
    parser.add_argument("--out-root", default="results/replays", metavar="DIR", help="default: results/replays")
    parser.add_argument("--queries", default=None, metavar="FILE",
                        help="ToolBench-style query file (a JSON list of {query, query_id, api_list})")
    parser.add_argument("--stb-root", default=None, metavar="DIR",
                        help="StableToolBench checkout for its queries. Default: $TBA_STB_ROOT, else the sample "
                        "set; answers whose query is in neither replay from their own query and functions")
    parser.add_argument("--compat", choices=("stb", "strict"), default="stb",
                        help="stb (default): upstream's name matching (an empty name calls the first function)")
    parser.add_argument("--concurrency", type=CONCURRENCY, default=4, help="queries replayed at once (default 4)")
    parser.add_argument("--json", action="store_true", help="print the totals as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from runners.replay import format_totals, replay

    result = replay(args.inputs, args.name, out_root=args.out_root, stb_root=args.stb_root,
                    queries_file=args.queries, compat=args.compat, concurrency=args.concurrency,
                    progress=sys.stderr.isatty())
    print(json.dumps(result.totals(), indent=2) if args.json else format_totals(result))
    if result.reasons:
        for line in result.lines:
            if line["reason"]:
                field = f"field {line['field']}: " if line.get("field") else ""
                print(f"not replayed {line['source']}: {line['reason']}: {field}{line.get('message', '')}",
                      file=sys.stderr)
        return 3
    return 0
