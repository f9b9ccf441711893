"""tba judge-audit: re-judge the answers of released label files with a judge of your choice; agreement."""

from __future__ import annotations

import argparse
import json

from toolbench_adapter.evaluation.audit import audit, audit_record, audit_text, pass_rate_sets
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.labelsets import discover_all
from toolbench_adapter.fileio import write_text_atomic

from ..ranges import COUNT
from ._common import (
    JUDGE_FAILURES_EXIT,
    add_judge_constrain,
    add_judge_flags,
    judge_client_from_args,
    judge_failures_lines,
    prepare_judge_args,
    redo_command,
)

JUDGE_ERRORS_EXIT = JUDGE_FAILURES_EXIT

HELP = f"""\
Released pass-rate label files hold each answer (answer_steps, final_step) and the published judge's labels.
Judge those answers again with the judge you choose (the judge flags of `tba judge`; judgements cached) and
report how far it agrees with the released labels: the confusion matrix over Solved / Unsolved / Unsure
(pairs of (query, repeat)), accuracy, Cohen's kappa, and the SoPR each side gives, per group. This is how
much a reproduction drifts because of the judge alone (StableToolBench issues 5 and 7).

Answers come from --converted DIR ({{model}}/{{group}}.json converted files) when given, exactly; otherwise they
are rebuilt from the label file: same final answer, but on Unsure parse_answer_status sees the tool steps
only. Answers without a Finish step (or with an empty / give-up final answer) are Unsolved by rule, with
no request, on both sides. The judge is checked before any work (it answers, serves --judge-model, answers
one test request; else exit 2). Exit status {JUDGE_ERRORS_EXIT} when judgements still failed: they are left
out of the agreement and of our SoPR (counted apart), --out is written only with --score-anyway, and the
command that redoes only them is printed (cached verdicts are kept); 2 for bad input."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("judge-audit", help="agreement of a judge with released pass-rate labels",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--labels", nargs="+", required=True, metavar="DIR",
                        help="released label folders or files (any layout `tba reproduce --help` lists)")
    parser.add_argument("--converted", nargs="+", default=[], metavar="DIR",
                        help="converted answers {model}/{group}.json, for the exact answers "
                        "(e.g. <stb>/data_example/model_predictions_converted)")
    add_judge_flags(parser, evaluator_help="evaluator folder or name (default: the project's own)",
                    prefill_help="openai judge on vLLM/SGLang: start the verdict for the model (continue_final_message)")
    add_judge_constrain(parser)
    parser.add_argument("--evaluate-times", type=COUNT, default=None,
                        help="repeats per answer (default: as many as the released labels hold)")
    parser.add_argument("--limit", type=COUNT, default=None, metavar="N",
                        help="audit only the first N queries of each label file")
    parser.add_argument("--concurrency", type=COUNT, default=4, help="parallel judge requests (default 4)")
    parser.add_argument("--out", default=None, metavar="FILE", help="also write the audit as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    found = discover_all(args.labels)
    pass_rate_sets(found)  # bad input before the judge is asked anything
    client = judge_client_from_args(args)
    spec = load_evaluator(args.evaluator, args.evaluators_dir)
    judge = prepare_judge_args(client, spec, args.judge_mode, attempts=args.attempts, constrain=args.judge_constrain)
    results = audit(found, judge, evaluate_times=args.evaluate_times, converted_dirs=args.converted,
                    cache_path=None if args.no_cache else args.cache, concurrency=args.concurrency,
                    limit=args.limit, progress=not args.no_progress)
    print(audit_text(results, f"{judge.name}; evaluator {spec.name}"), end="")
    errors = sum(r.errors for r in results)
    if args.out and (not errors or args.score_anyway):
        write_text_atomic(args.out, json.dumps(audit_record(results, judge.name), indent=2))
        print(f"audit: {args.out}")
    if errors:
        total = sum(len(reps) for r in results for reps in r.ours.values())
        samples = list(dict.fromkeys(sample for r in results for sample in r.error_samples))
        redo = redo_command(args, ["judge-audit", "--labels", *args.labels])
        print("\n".join(judge_failures_lines(errors, total, samples, redo, never="disagreements",
                                             written=bool(args.out) and args.score_anyway,
                                             cached=not args.no_cache)))
        return JUDGE_ERRORS_EXIT
    return 0
