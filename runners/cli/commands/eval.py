"""tba eval: run, evaluate and tabulate in one command (`make eval` calls it), every check done first."""

from __future__ import annotations

HELP = """\
One command from a model to its leaderboard row: tba run (the run's flags), then tba evaluate on its folder
(the judge's flags; the leaderboards and the error taxonomy printed and written under RUN/tables/).

Every setting is checked before any model is loaded or any call is made, cheapest first, so a mistake costs
nothing: the run's settings, the backend's name (an unknown one names the closest), the dialect, parser,
method and executor, the query data (--stb-root / --tool-root: the queries are read now), the llm / mirrorapi
simulator's endpoint (reachable and listing --llm-model: one GET /models), the judge (a judge
backend that exists; an openai judge needs --judge-url; a judge that is the run's own model is refused
unless --judge-self: the rule tba evaluate applies, evaluations.same_model; an openai judge reachable and
serving the model: one GET /models per URL), the run folder and the judge cache being writable. --check-only stops there (exit 0: every check passed): make's compare-parsers-live and
compare-structured run it before their own runs.

The judge's --concurrency and --cache are --judge-concurrency and --judge-cache here (--concurrency is the
run's). Rerunning the same command goes on where it stopped: finished queries are skipped, cached verdicts
kept. Exit status: 0 done; 2 bad input (nothing run); 3 the run holds infrastructure failures (not judged;
the same command redoes them) or judgements failed."""


def register(subparsers) -> None:
    import argparse

    from ..ranges import CONCURRENCY
    from .evaluate import add_judge_arguments
    from .run import add_run_arguments

    p = subparsers.add_parser("eval", help="run, evaluate and tabulate in one command (checks first)",
                              description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(p, fanout=False)
    add_judge_arguments(p)
    p.add_argument("--judge-concurrency", type=CONCURRENCY, default=4, help="judge requests in flight (default 4)")
    p.add_argument("--judge-cache", default="results/cache/judge.jsonl",
                   help="judgement cache file (default results/cache/judge.jsonl)")
    p.add_argument("--check-only", action="store_true",
                   help="do every check, then stop (exit 0: the same command without it would start the run)")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys

    from toolbench_adapter.evaluation.judging.passrate import cost_line

    from . import evaluate
    from . import run as run_command

    cfg, evaluate_args, summary, queries = check(args)
    # what the judge's numbers multiply to, before anything runs (tba evaluate says it again with the answers)
    print(cost_line(queries * args.evaluate_times, f"{queries:,} query runs x {args.evaluate_times} repeats "
                    "(--evaluate-times), after the run"), file=sys.stderr, flush=True)
    if args.check_only:
        print(f"tba eval: every check passed ({summary}); nothing loaded, nothing run")
        return 0
    args.evaluates_next = True  # the run's summary leaves out its "next: tba evaluate" line: that comes now
    code = run_command.run(args)
    if code:  # infrastructure failures: judging now would score a run with holes (tba evaluate refuses it)
        print(f"tba eval: not evaluated: the run holds infrastructure failures; rerun the same command to redo them "
              f"and evaluate ({cfg.run_dir})")
        return code
    return evaluate.run(evaluate_args)


def check_run_settings(cfg) -> list:
    """The run's names (backend, dialect, parser, method, executor; an unknown one names the closest), its data
    (the queries read now, not after the model has loaded; --tool-root a folder) and its simulator's endpoint
    (llm / mirrorapi: one GET /models): its queries, or InputError or UnknownNameError (exit 2). tba eval and tba
    sweep (each cell) check a run with it."""
    from pathlib import Path

    from toolbench_adapter.dialects import DIALECTS
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.parsers import PARSERS

    from ...config import select_queries
    from ...execution.executors import executor_class
    from ...execution.preflight import simulator_endpoint
    from ...models import BACKENDS

    for registry, name in ((BACKENDS, cfg.backend), (DIALECTS, cfg.dialect), (PARSERS, cfg.parser)):
        if name and name not in registry:
            registry.get(name)  # raises: unknown NAME, did you mean ...
    cfg.search_method()
    executor_class(cfg.executor)
    queries = select_queries(cfg)  # the data path: read now, not after the model has loaded
    if not queries:
        raise InputError("the selection holds no query", field="--groups / --query-ids / --limit",
                         fix="widen the selection (tba queries lists what the data holds)")
    if cfg.tool_root and not Path(cfg.tool_root).is_dir():
        raise InputError("no such folder", path=cfg.tool_root, field="--tool-root",
                         fix="pass the tool environment folder (toolenv/tools), or leave --tool-root out")
    simulator_endpoint(cfg)  # the llm / mirrorapi simulator's endpoint: one GET /models, before any model loads
    return queries


def check(args):
    """(the run's config, tba evaluate's arguments, a one-line summary) once every check passed; InputError or
    UnknownNameError (exit 2) at the first that fails. The order is the cost of finding out: flags, names, files."""
    import argparse

    from toolbench_adapter.errors import InputError
    from toolbench_adapter.evaluation.cache import check_cache_path
    from toolbench_adapter.evaluation.evaluator import load_evaluator
    from toolbench_adapter.evaluation.judging.chat import CHAT_CLIENTS
    from toolbench_adapter.evaluation.judging.judge import constrained_mode
    from toolbench_adapter.files.fileio import check_writable

    from ...judging.evaluate import check_self_judging
    from ._common import judge_client_options
    from .evaluate import judge_target
    from .run import config_from_args

    args.judge_self = args.judge_self or args.judge == "self"
    cfg = config_from_args(args)  # every setting's type and range
    queries = check_run_settings(cfg)
    if cfg.trials > 1:  # a set of trials: its agent can differ from trial to trial, its folder is a set's
        from ...execution.preflight import make_backend
        from ...execution.trials import check_set_folder, check_trials

        check_trials(cfg, make_backend(cfg))
        check_set_folder(cfg)
    if args.judge_backend not in CHAT_CLIENTS:
        CHAT_CLIENTS.get(args.judge_backend)  # raises with the known judge backends
    evaluate_args = argparse.Namespace(**vars(args))
    evaluate_args.run_dir = str(cfg.run_dir)
    evaluate_args.concurrency = args.judge_concurrency
    evaluate_args.cache = args.judge_cache
    evaluate_args.executor, evaluate_args.ray_address = "threads", None
    # the run as its manifest will read: the judge is checked against it now, with tba evaluate's own rule
    planned = {"config": cfg.as_dict(), "backend": cfg.backend, "model": cfg.model}
    judge_model, urls = judge_target(evaluate_args, planned)
    check_self_judging(planned, judge_model, judge_self=args.judge_self,
                       pipeline_check=args.judge_backend == "hf" and not judge_model)  # the local 135M judge
    judge_client_options(evaluate_args)
    load_evaluator(args.evaluator, [args.evaluators_dir] if args.evaluators_dir else [])  # its file, read now
    if args.judge_constrain and args.judge_mode == "tools":
        constrained_mode(None, "tools")  # raises: the forced tool call and a JSON grammar do not go together
    if args.judge_backend == "hf" and args.judge_mode == "tools":
        raise InputError("--judge-mode tools with --judge-backend hf: the local judge takes no tools (it answers "
                         "in text)", field="--judge-mode", fix="leave --judge-mode out (auto: json for a local "
                         "judge), or pass --judge-mode json")
    check_writable(cfg.run_dir)
    check_cache_path(args.judge_cache)
    if args.prices:  # a price file with a mistake: exit 2 now, not after the run
        from toolbench_adapter.runs.cost import read_prices

        read_prices(args.prices)
    if args.judge_backend == "openai":  # a dead judge found now, not after the run: one GET /models per URL
        import sys

        from toolbench_adapter.evaluation.judging.preflight import check_served

        from ...judging.judge_ray import ChatRecipe

        options = {"timeout": args.judge_timeout} if args.judge_timeout else {}
        client = ChatRecipe("openai", judge_model, urls, args.judge_api_key, options).build()
        check_served(client, warn=lambda line: print(line, file=sys.stderr))
        if args.judge_constrain:  # --judge-constrain needs a judge that takes structured outputs: asked now
            constrained_mode(client, args.judge_mode)
    summary = (f"backend {cfg.backend}, {len(queries)} queries"
               f"{f' x {cfg.trials} trials' if cfg.trials > 1 else ''}, judge {args.judge_backend}"
               f"{' ' + judge_model if judge_model else ''}{' (self)' if args.judge_self else ''}")
    return cfg, evaluate_args, summary, len(queries) * cfg.trials  # the answers the judge will see
