"""tba judge-audit: re-judge the answers of released label files with a judge of your choice; agreement."""

from __future__ import annotations

import argparse
import json
import time

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.audit.agreement import RESAMPLES
from toolbench_adapter.evaluation.audit.cards import CARDS_ENV, citation, write_card
from toolbench_adapter.evaluation.audit.rejudge import audit, audit_cost, plan_audit
from toolbench_adapter.evaluation.audit.report import (
    audit_record,
    audit_text,
    card_entry,
    cost_text,
    pace_text,
    summarize,
)
from toolbench_adapter.evaluation.audit.sets import AUDIT_SETS, audit_set, labels_digest
from toolbench_adapter.evaluation.cache import JudgementCache
from toolbench_adapter.evaluation.evaluations import JudgeIdentity
from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.labelsets import discover_all
from toolbench_adapter.files.fileio import write_text_atomic

from ..ranges import ANSWERS, BOOTSTRAP_RESAMPLES, CONCURRENCY, REPEATS, SEED
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
(pairs of (query, repeat)), accuracy and Cohen's kappa on the pairs the judge decided (pairs decided by rule
are counted apart), the SoPR each side gives over every answer and the SoPR shift (ours - released), per
group and on the Average; kappa and the shift with a 95% bootstrap interval over answers. This is how much
a reproduction drifts because of the judge alone (StableToolBench issues 5 and 7).

Sets by name (--set): {', '.join(AUDIT_SETS)}. A complete audit is kept on the judge's card (--judge-cards DIR, else
$TBA_JUDGE_CARDS, else results/judge_cards; <judge-id>.json, the id evaluations use) and the line that cites it
is printed (judge_cards.citation gives any table by that judge the same line).

Answers come from --converted DIR ({{model}}/{{group}}.json converted files) when given, exactly; otherwise they
are rebuilt from the label file: same final answer, but on Unsure parse_answer_status sees the tool steps
only. Answers without a Finish step (or with an empty / give-up final answer) are Unsolved by rule, with
no request, on both sides. The judge is checked before any work (it answers, serves --judge-model, answers
one test request; else exit 2). Exit status {JUDGE_ERRORS_EXIT} when judgements still failed: they are left
out of the agreement and of our SoPR (counted apart), --out is written only with --score-anyway, and the
command that redoes only them is printed (cached verdicts are kept; no card is written); 2 for bad input."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("judge-audit", help="agreement of a judge with released pass-rate labels",
                                   description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--set", default=None, metavar="NAME",
                        help=f"a released label set the project ships: {', '.join(AUDIT_SETS)}")
    source.add_argument("--labels", nargs="+", metavar="DIR",
                        help="released label folders or files (any layout `tba reproduce --help` lists)")
    parser.add_argument("--converted", nargs="+", default=[], metavar="DIR",
                        help="converted answers {model}/{group}.json, for the exact answers "
                        "(e.g. <stb>/data_example/model_predictions_converted; --set brings its own)")
    add_judge_flags(parser, evaluator_help="evaluator folder or name (default: the project's own)",
                    prefill_help="openai judge on vLLM/SGLang: start the verdict for the model (continue_final_message)")
    add_judge_constrain(parser)
    parser.add_argument("--evaluate-times", type=REPEATS, default=None,
                        help="repeats per answer (default: as many as the released labels hold)")
    parser.add_argument("--limit", type=ANSWERS, default=None, metavar="N",
                        help="audit only the first N queries of each label file")
    parser.add_argument("--sample", type=ANSWERS, default=None, metavar="N",
                        help="audit N answers drawn at random, stratified by group and released label")
    parser.add_argument("--seed", type=SEED, default=0,
                        help="seed of the --sample draw and of the bootstrap resamples (default 0)")
    parser.add_argument("--resamples", type=BOOTSTRAP_RESAMPLES, default=RESAMPLES,
                        help=f"bootstrap resamples for the intervals (default {RESAMPLES})")
    parser.add_argument("--concurrency", type=CONCURRENCY, default=4, help="parallel judge requests (default 4)")
    parser.add_argument("--judge-cards", default=None, metavar="DIR",
                        help=f"where judge cards are kept (default: ${CARDS_ENV}, else results/judge_cards)")
    parser.add_argument("--out", default=None, metavar="FILE", help="also write the audit as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.sample is not None:
        raise InputError("--limit and --sample both choose the answers", field="--sample",
                         fix="give one: --sample N draws N answers stratified by group and label")
    chosen = audit_set(args.set) if args.set else None
    labels = [str(chosen.labels)] if chosen else args.labels
    converted = [*args.converted, str(chosen.converted)] if chosen else args.converted
    # bad input before the judge is asked anything
    found = discover_all(labels)
    sets = plan_audit(found, evaluate_times=args.evaluate_times, converted_dirs=converted,
                      limit=args.limit, sample=args.sample, seed=args.seed)
    client = judge_client_from_args(args)
    spec = load_evaluator(args.evaluator, args.evaluators_dir)
    judge = prepare_judge_args(client, spec, args.judge_mode, attempts=args.attempts, constrain=args.judge_constrain)
    cache = JudgementCache(None if args.no_cache else args.cache)
    cost = audit_cost(sets, judge, cache)
    print(cost_text(cost, args.concurrency, args.attempts), flush=True)

    def first(seconds: float, requests: int) -> None:  # the first judgement, made alone: the rest's estimate
        print(pace_text(seconds, requests, cost.to_ask - 1, args.concurrency), flush=True)

    started = time.monotonic()
    results = audit(sets, judge, cache, concurrency=args.concurrency, progress=not args.no_progress, first=first)
    seconds = time.monotonic() - started
    summary = summarize(results, resamples=args.resamples, seed=args.seed)
    print(audit_text(results, f"{judge.name}; evaluator {spec.name}", summary, seconds), end="")
    errors = sum(r.errors for r in results)
    if args.out and (not errors or args.score_anyway):
        write_text_atomic(args.out, json.dumps(audit_record(results, judge.name, summary), indent=2))
        print(f"audit: {args.out}")
    if errors:
        total = sum(len(reps) for r in results for reps in r.ours.values())
        samples = list(dict.fromkeys(sample for r in results for sample in r.error_samples))
        redo = redo_command(args, ["judge-audit", *(["--set", args.set] if args.set else ["--labels", *labels])])
        print("\n".join(judge_failures_lines(errors, total, samples, redo, never="disagreements",
                                             written=bool(args.out) and args.score_anyway,
                                             cached=not args.no_cache)))
        return JUDGE_ERRORS_EXIT
    times = max(r.evaluate_times for r in results)
    identity = JudgeIdentity.of(client, judge, times, {})
    entry = card_entry(results, summary, set_name=args.set, labels=None if args.set else labels,
                       sample=args.sample, seed=args.seed, limit=args.limit, labels_digest=labels_digest(found))
    path = write_card(identity, entry, args.judge_cards)
    print(f"judge card: {path}")
    print(f"cite as: {citation(identity, args.judge_cards)}")
    return 0
