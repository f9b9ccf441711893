"""tba convert: raw answer files -> one converted answer file (the judges' input)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from toolbench_adapter.answers.convert import ORDERS, Refused, convert_folder, methods_found
from toolbench_adapter.errors import InputError
from toolbench_adapter.files.fileio import check_output_file, write_json_atomic

from ..ranges import INDENT, SEED

HELP = """\
Convert the raw answer files of one group folder ({qid}_{method}.json, both message styles) into the
converted format {qid: {query, available_tools, answer}} that `tba judge` reads, as StableToolBench's
convert_to_answer_format.py does. Invalid answers fall back to a random CoT try or a random walk of the
DFS tree, with upstream's RNG (seed 42, drawn at every step of every file), so the file order matters:
upstream read files in os.listdir order, recorded by the key order of its output (--order-from).

A file that cannot be converted (not JSON, nested deeper than the parser follows, a node, message or call
of the wrong shape, no query id) is refused: its path, field and reason are printed, the other files are
converted as if it were not there (the fallback RNG skips it), and the command exits 3 with the count of
refused files. Exit 2, writing nothing, when no file could be converted or two files answer one query id."""

EXIT_REFUSED_FILES = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("convert", help="raw answer files -> converted answer file", description=HELP,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", required=True, nargs="+", metavar="FILE_OR_DIR",
                        help="folder of one group's raw answers, e.g. results/run1/G1_instruction (a folder with no "
                        "*.json of its own: every *.json below it), or answer files; query ids come from the file "
                        "or its name, and two files with one id are an error")
    parser.add_argument("--method", required=True,
                        help="substring that selects files (e.g. CoT@1, DFS_woFilter_w2); also picks the "
                        "fallback for invalid answers (CoT or DFS in it, as upstream; any other method: the file's "
                        "shape, trys as CoT, a tree as DFS) and is written as answer.method")
    parser.add_argument("--out", required=True, metavar="FILE", help="converted answer file to write (atomically)")
    parser.add_argument("--order", choices=ORDERS, default="name",
                        help="file order, which decides the random fallbacks (default: sorted names)")
    parser.add_argument("--order-from", metavar="FILE", default=None,
                        help="process files in the key order of this (upstream) converted file")
    parser.add_argument("--seed", type=SEED, default=42, help="converter RNG seed (upstream: 42)")
    parser.add_argument("--indent", type=INDENT, default=None,
                        help="JSON indent (default: none, as the released converted files; upstream HEAD uses 2)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check_output_file(args.out)  # before any work: an unwritable --out is exit 2, not a traceback
    refused: list[Refused] = []
    converted = convert_folder(args.answers, args.method, order=args.order, order_from=args.order_from,
                               seed=args.seed, refused=refused)
    if not converted and refused:
        raise InputError(f"no answer file could be converted ({len(refused)} refused):\n"
                         + "\n".join(f"  {item.reason}: {item.message}" for item in refused),
                         path=", ".join(args.answers), fix="re-run the queries of these files, or pass other files")
    if not converted:  # never write an empty converted file: the judge would score nothing, silently
        found = methods_found(args.answers)
        raise InputError(f"no answer file name contains {args.method!r}", path=", ".join(args.answers),
                         field="--method",
                         fix=f"methods found in the folder: {', '.join(found)}" if found
                         else "the folder holds no .json answer files: pass a group folder of a run")
    write_json_atomic(args.out, converted, indent=args.indent)
    invalid = sum(1 for item in converted.values() if not item["answer"]["final_answer"])
    print(f"converted {len(converted)} answers ({invalid} with an empty final answer) -> {args.out}")
    if refused:
        for item in refused:
            print(f"refused ({item.reason}) {item.message}", file=sys.stderr)
        counts = Counter(item.reason for item in refused)
        print(f"REFUSED {len(refused)} of {len(refused) + len(converted)} answer files ("
              + ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items()))
              + f"): not in {args.out}, so not judged", file=sys.stderr)
        return EXIT_REFUSED_FILES
    return 0
