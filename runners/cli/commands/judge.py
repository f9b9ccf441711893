"""tba judge: judge a converted answer file with an LLM judge; write upstream-layout labels and scores."""

from __future__ import annotations

import argparse
import sys

from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judging.passrate import cost_line
from toolbench_adapter.evaluation.judging.run_judge import fac_file, judge_file, names_from_path, read_converted

from ..ranges import CONCURRENCY, REPEATS
from ._common import (
    JUDGE_FAILURES_EXIT,
    add_judge_constrain,
    add_judge_flags,
    judge_client_from_args,
    judge_failures_lines,
    preflight_judge_args,
    prepare_judge_args,
    redo_command,
)

HELP = """\
Judge every answer of a converted answer file (written by `tba convert`) --evaluate-times times with
StableToolBench's decision procedure: no Finish in the final step, or an empty / give-up final answer, is
Unsolved without a request; otherwise check_answer_status, and on Unsure parse_answer_status over the whole
answer. Labels go to OUT/{group}_{model}.json and .csv (upstream layout) with OUT/{group}_{model}.meta.json
naming the judge; scores (SoPR upstream, and strict with --test-ids) to OUT/scores_{group}_{model}.json.
Judgements are cached (judge, evaluator, query, answer, repeat), so judging again makes no requests.
Before any work the judge is checked: it answers, serves --judge-model and answers one test request (else
exit 2 naming the flag to fix). A judgement that still fails (the endpoint after the client's retries, or
malformed verdicts after --attempts) is stored as JudgeError, left out of every score (never Unsolved) and
counted: the command then exits 3, writes no score file unless --score-anyway, and prints the command that
redoes only the failed judgements (cached verdicts are kept).
--metric fac instead scores Final Answer Correctness (StableToolBench's fac_eval.py scoring, our prompt) over
the test ids, to OUT/fac_{group}_{model}.json and OUT/scores_fac_{group}_{model}.json."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("judge", help="LLM-judge converted answers (pass rate labels)", description=HELP,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--converted", required=True, metavar="FILE",
                        help="converted answer file; upstream layout {dir}/{model}/{group}.json names model and group")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for label, meta and score files")
    parser.add_argument("--group", default=None, help="test group (default: the file name)")
    parser.add_argument("--model", default=None, help="model name in file names and tables (default: parent folder)")
    add_judge_flags(parser, evaluator_help="evaluator folder (config.yaml + template.txt), or its name under --evaluators-dir; default: the project's own",
                    prefill_help='openai judge on vLLM/SGLang: start the verdict for the model (continue_final_message)')
    add_judge_constrain(parser)
    parser.add_argument("--evaluate-times", type=REPEATS, default=3, help="independent judgements per query (default 3)")
    parser.add_argument("--concurrency", type=CONCURRENCY, default=4, help="parallel judge requests (default 4)")
    parser.add_argument("--test-ids", default=None, metavar="DIR",
                        help="test-id folder ({group}.json): judge only those ids and add the strict SoPR")
    parser.add_argument("--metric", choices=["sopr", "fac"], default="sopr",
                        help="sopr: pass-rate labels (default); fac: final answer correctness")
    parser.add_argument("--fac-unwrap", action="store_true",
                        help="FAC: judge the text inside the Finish arguments (strict; upstream judges the raw string)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    group, model = names_from_path(args.converted)
    answers = len(read_converted(args.converted))  # bad input before the judge is asked anything
    client = judge_client_from_args(args)
    redo = redo_command(args, ["judge", "--converted", args.converted, "--out", args.out])
    if args.metric == "fac":
        preflight_judge_args(client)
        print(f"{answers:,} judge requests: {answers:,} answers, one FAC request each (not cached; HTTP faults "
              "retried on top)", file=sys.stderr, flush=True)
        _run, row, path = fac_file(args.converted, client, args.out, group=args.group or group,
                                   model=args.model or model, test_ids_dir=args.test_ids,
                                   unwrap_finish=args.fac_unwrap, concurrency=args.concurrency,
                                   score_anyway=args.score_anyway)
        print(f"judge: {client.name}; {_run.requests} requests, {_run.errors} failed, {len(_run.missing)} ids "
              f"without an answer")
        if not _run.errors or args.score_anyway:
            print(f"FAC {row.score.mode} {row.group} {row.model}: {row.score.text(False)}  ({row.score.note})")
        print(f"records: {path}")
        if _run.errors:
            samples = sorted({r["evaluation"] for r in _run.records.values() if r.get("judge_error")})
            # FAC verdicts are not cached: the redo asks every answer again
            print("\n".join(judge_failures_lines(_run.errors, _run.requests, samples, redo,
                                                 written=args.score_anyway, cached=False)))
            return JUDGE_FAILURES_EXIT
        return 0
    spec = load_evaluator(args.evaluator, args.evaluators_dir)
    judge = prepare_judge_args(client, spec, args.judge_mode, attempts=args.attempts, constrain=args.judge_constrain)
    print(cost_line(answers * args.evaluate_times, f"{answers:,} answers x {args.evaluate_times} repeats "
                    "(--evaluate-times)", args.attempts), file=sys.stderr, flush=True)
    outcome = judge_file(args.converted, judge, args.out, group=args.group or group, model=args.model or model,
                         evaluate_times=args.evaluate_times, test_ids_dir=args.test_ids,
                         concurrency=args.concurrency, cache_path=None if args.no_cache else args.cache,
                         progress=not args.no_progress, score_anyway=args.score_anyway)
    run_ = outcome.run
    print(f"judge: {judge.name}; evaluator {spec.name} ({spec.path})")
    print(f"{len(run_.entries)} queries x {args.evaluate_times}: {run_.requests} requests, "
          f"{run_.cache_hits} cached, {run_.errors} failed")
    if outcome.score_file is not None:
        for row in outcome.rows:
            errors = f", {row.score.errors} failed judgements left out" if row.score.errors else ""
            print(f"SoPR {row.score.mode:<8} {row.group} {row.model}: {row.score.text()}  ({row.score.note}{errors})")
    print(f"labels: {outcome.label_file}" + (f"\nscores: {outcome.score_file}" if outcome.score_file else ""))
    if run_.errors:
        print("\n".join(judge_failures_lines(run_.errors, run_.judgements, run_.error_samples, redo,
                                             written=outcome.score_file is not None, cached=not args.no_cache)))
        return JUDGE_FAILURES_EXIT
    return 0
