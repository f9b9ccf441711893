"""tba score: SoPR / SoWR from label files (upstream JSON or tab-separated CSV, or ours), as a score file."""

from __future__ import annotations

import argparse

from toolbench_adapter.evaluation.evaluations import refuse_mixed
from toolbench_adapter.evaluation.scoring.results import rows_from_labels, write_score_file

from ..ranges import REPEATS
from ._common import JUDGE_FAILURES_EXIT

HELP = """\
Score label files without any judge request. Pass-rate labels ({model}/{group}_{model}.json or .csv, upstream
layout, or {model}/{group}.json in per-model folders, the model named by the folder) give SoPR as upstream
computes it (Solved 1, Unsure 0.5; per-repeat score over the queries with an answer file; mean and population std over
repeats) and, with --test-ids, strict (denominator = the whole test set, missing answers
Unsolved). Preference files ({group}_{ref}_{out}.json or .csv) give SoWR as upstream (wins / all ids, ties 0)
and corrected (ties count half). Files and folders (searched recursively) may be mixed; a folder where no
label file is recognised is an error (exit 2) naming the layouts expected. A failed judgement (JudgeError in a
label file, a failed round in our preference meta file) is no verdict: left out of the score and counted;
then the exit status is 3 and --out is written only with --score-anyway. A folder holding several evaluations
(a run's eval/: tba evaluate keeps each judge's in eval/ID) is refused (exit 2): pass one RUN/eval/ID."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("score", help="SoPR / SoWR from label files", description=HELP,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("labels", nargs="+", metavar="LABELS", help="label files or folders")
    parser.add_argument("--test-ids", default=None, metavar="DIR",
                        help="test-id folder ({group}.json) for the strict SoPR, e.g. <stb>/solvable_queries/test_query_ids")
    parser.add_argument("--evaluate-times", type=REPEATS, default=None,
                        help="repeats to score (default: the highest repeat index found + 1)")
    parser.add_argument("--prefer", choices=[".json", ".csv"], default=".json",
                        help="when a JSON and a CSV label file sit side by side, score this one (default .json)")
    parser.add_argument("--out", default=None, metavar="FILE", help="write the rows as a score file for `tba table`")
    parser.add_argument("--score-anyway", action="store_true",
                        help="write --out although judgements failed (their rows count them; exit status 3 still)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    for path in args.labels:
        refuse_mixed(path)  # a run's eval/ with several judges' evaluations: one of them, not a mix
    rows = rows_from_labels(args.labels, args.test_ids, args.evaluate_times, args.prefer)
    for row in rows:
        with_std = row.score.metric == "SoPR"
        name = f"{row.model} vs {row.reference}" if row.reference else row.model
        extra = f", {row.score.errors} failed judgements left out" if row.score.errors else ""
        extra += f", {row.score.missing} missing" if row.score.missing else ""
        print(f"{row.score.metric} {row.score.mode:<9} {row.group:<15} {name}: {row.score.text(with_std)} "
              f"(n={row.score.n}{extra}; {row.score.note})")
    failed = sum(row.score.errors for row in rows if row.score.mode == "upstream")  # strict / corrected: the same
    if args.out and (not failed or args.score_anyway):
        write_score_file(args.out, rows)
        print(f"score file: {args.out}")
    if failed:
        sources = sorted({row.source for row in rows if row.score.errors and row.source})
        print(f"JUDGE FAILURES {failed} judgements without a verdict in {', '.join(sources)}: left out of the "
              "scores above, never counted as Unsolved" + ("" if args.score_anyway or not args.out else
                                                            f"; {args.out} not written (--score-anyway writes it)"))
        print("  redo them with the tba judge / tba evaluate command that wrote these labels (cached verdicts are "
              "kept: only the failed ones are asked again)")
        return JUDGE_FAILURES_EXIT
    return 0
