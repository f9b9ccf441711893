"""tba prefer: a judge compares two models' converted answers round by round; writes SoWR preference files."""

from __future__ import annotations

import argparse
import sys

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.passrate import cost_line
from toolbench_adapter.evaluation.judging.preference import DEFAULT_SEED, prefer_files
from toolbench_adapter.evaluation.judging.run_judge import names_from_path, read_converted

from ..ranges import CONCURRENCY, REPEATS, SEED
from ._common import (
    JUDGE_FAILURES_EXIT,
    add_judge_flags,
    judge_client_from_args,
    judge_failures_lines,
    prepare_judge_args,
    redo_command,
)

HELP = """\
Solvable Win Rate judgements (StableToolBench eval_preference.py): for every test id and round
(--evaluate-times), a missing reference answer gives the round to the output model and a missing output answer
to the reference; otherwise both answers (cut as upstream cuts them) are shown in a seeded random order, each
gets a pass-rate status, and exactly one Solved (else exactly one Unsure) wins; in every other case the judge's
select_better_answer picks one. The judge is checked before any work (it answers, serves --judge-model,
answers one test request; else exit 2). A round the judge cannot decide (no verdict after the client's
retries and --attempts) is recorded with its error; its query is left out of SoWR (never a tie) and
counted; the command exits 3, writes no score file unless --score-anyway, and prints the command that redoes
only those rounds (cached judgements are kept).
Writes OUT/{group}_{ref}_{out}.json and .csv (upstream layout), .meta.json (every round's record) and
OUT/scores_{group}_{ref}_{out}.json; prints SoWR upstream (ties 0) and corrected (ties half).
Judgements share the cache of `tba judge`, so a second run makes no requests."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("prefer", help="LLM-judge two models' answers against each other (SoWR)",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ref", required=True, metavar="FILE",
                        help="reference model's converted answers; upstream layout {dir}/{model}/{group}.json")
    parser.add_argument("--out-answers", required=True, metavar="FILE", help="output model's converted answers")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for preference, meta and score files")
    parser.add_argument("--group", default=None, help="test group (default: the file names)")
    parser.add_argument("--ref-model", default=None, help="reference model name (default: --ref's parent folder)")
    parser.add_argument("--output-model", default=None,
                        help="output model name (default: --out-answers' parent folder)")
    add_judge_flags(parser, evaluator_help='evaluator folder (needs select_better_answer), or its name under --evaluators-dir',
                    prefill_help='openai judge on vLLM/SGLang: start status verdicts for the model')
    parser.add_argument("--evaluate-times", type=REPEATS, default=3, help="rounds per query (default 3, as STB's SoWR)")
    parser.add_argument("--seed", type=SEED, default=DEFAULT_SEED, help="seed of the answer order (recorded)")
    parser.add_argument("--concurrency", type=CONCURRENCY, default=4, help="parallel rounds (default 4)")
    parser.add_argument("--test-ids", default=None, metavar="DIR",
                        help="test-id folder ({group}.json); default: every id of either file")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ref_group, ref_model = names_from_path(args.ref)
    out_group, out_model = names_from_path(args.out_answers)
    if args.group is None and ref_group != out_group:
        raise InputError(f"the two files name different groups ({ref_group}, {out_group})", field="--group",
                         fix="pass --group NAME")
    client = judge_client_from_args(args)
    spec = load_evaluator(args.evaluator, args.evaluators_dir)
    judge = prepare_judge_args(client, spec, args.judge_mode, attempts=args.attempts)
    queries = len(read_converted(args.out_answers))
    print(cost_line(queries * args.evaluate_times, f"{queries:,} queries x {args.evaluate_times} rounds "
                    "(--evaluate-times)", args.attempts, unit="rounds", per=(2, 5)), file=sys.stderr, flush=True)
    outcome = prefer_files(args.ref, args.out_answers, judge, args.out, group=args.group or ref_group,
                           reference_model=args.ref_model or ref_model, output_model=args.output_model or out_model,
                           evaluate_times=args.evaluate_times, test_ids_dir=args.test_ids,
                           concurrency=args.concurrency, cache_path=None if args.no_cache else args.cache,
                           seed=args.seed, progress=not args.no_progress, score_anyway=args.score_anyway)
    run_ = outcome.run
    print(f"judge: {judge.name}; evaluator {spec.name} ({spec.path}); seed {args.seed}")
    print(f"{len(run_.prefer_dict)} queries x {args.evaluate_times} rounds: {run_.requests} requests, "
          f"{run_.cache_hits} cached, {len(run_.errors)} rounds failed")
    if outcome.score_file is not None:
        for row in outcome.rows:
            failed = f"; {row.score.errors} failed rounds, their queries left out" if row.score.errors else ""
            print(f"SoWR {row.score.mode:<9} {row.group} {row.model} vs {row.reference}: {row.score.text(False)}  "
                  f"({row.score.ties} ties; {row.score.note}{failed})")
    print(f"preferences: {outcome.preference_file}" + (f"\nscores: {outcome.score_file}" if outcome.score_file
                                                       else ""))
    if run_.errors:
        redo = redo_command(args, ["prefer", "--ref", args.ref, "--out-answers", args.out_answers, "--out", args.out])
        rounds = len(run_.prefer_dict) * args.evaluate_times
        samples = list(dict.fromkeys(error.split(": ", 1)[-1] for error in run_.errors))
        print("\n".join(judge_failures_lines(len(run_.errors), rounds, samples, redo, unit="rounds", never="ties",
                                             written=outcome.score_file is not None, cached=not args.no_cache)))
        return JUDGE_FAILURES_EXIT
    return 0
