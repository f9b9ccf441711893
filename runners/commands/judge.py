"""tba judge: judge a converted answer file with an LLM judge; write upstream-layout labels and scores."""

from __future__ import annotations

import argparse

from toolbench_adapter.evaluation.evaluator import load_evaluator
from toolbench_adapter.evaluation.judge import make_judge
from toolbench_adapter.evaluation.run_judge import fac_file, judge_file, names_from_path

from ._common import add_judge_flags, judge_client_from_args

HELP = """\
Judge every answer of a converted answer file (written by `tba convert`) --evaluate-times times with
StableToolBench's decision procedure: no Finish in the final step, or an empty / give-up final answer, is
Unsolved without a request; otherwise check_answer_status, and on Unsure parse_answer_status over the whole
answer. Labels go to OUT/{group}_{model}.json and .csv (upstream layout) with OUT/{group}_{model}.meta.json
naming the judge; scores (SoPR upstream, and strict with --test-ids) to OUT/scores_{group}_{model}.json.
Judgements are cached (judge, evaluator, query, answer, repeat), so judging again makes no requests.
A judge that keeps answering malformed verdicts gives an error label (counted), never a crash.
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
    parser.add_argument("--evaluate-times", type=int, default=3, help="independent judgements per query (default 3)")
    parser.add_argument("--concurrency", type=int, default=4, help="parallel judge requests (default 4)")
    parser.add_argument("--test-ids", default=None, metavar="DIR",
                        help="test-id folder ({group}.json): judge only those ids and add the strict SoPR")
    parser.add_argument("--metric", choices=["sopr", "fac"], default="sopr",
                        help="sopr: pass-rate labels (default); fac: final answer correctness")
    parser.add_argument("--fac-unwrap", action="store_true",
                        help="FAC: judge the text inside the Finish arguments (strict; upstream judges the raw string)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    group, model = names_from_path(args.converted)
    client = judge_client_from_args(args)
    if args.metric == "fac":
        _run, row, path = fac_file(args.converted, client, args.out, group=args.group or group,
                                   model=args.model or model, test_ids_dir=args.test_ids,
                                   unwrap_finish=args.fac_unwrap, concurrency=args.concurrency)
        print(f"judge: {client.name}; {_run.requests} requests, {_run.errors} errors, {len(_run.missing)} ids "
              f"without an answer")
        print(f"FAC {row.score.mode} {row.group} {row.model}: {row.score.text(False)}  ({row.score.note})")
        print(f"records: {path}")
        return 0
    spec = load_evaluator(args.evaluator, args.evaluators_dir)
    judge = make_judge(client, spec, args.judge_mode, attempts=args.attempts)
    outcome = judge_file(args.converted, judge, args.out, group=args.group or group, model=args.model or model,
                         evaluate_times=args.evaluate_times, test_ids_dir=args.test_ids,
                         concurrency=args.concurrency, cache_path=None if args.no_cache else args.cache,
                         progress=not args.no_progress)
    run_ = outcome.run
    print(f"judge: {judge.name}; evaluator {spec.name} ({spec.path})")
    print(f"{len(run_.entries)} queries x {args.evaluate_times}: {run_.requests} requests, "
          f"{run_.cache_hits} cached, {run_.errors} judge errors")
    for row in outcome.rows:
        print(f"SoPR {row.score.mode:<8} {row.group} {row.model}: {row.score.text()}  ({row.score.note})")
    print(f"labels: {outcome.label_file}\nscores: {outcome.score_file}")
    return 0
