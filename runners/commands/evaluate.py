"""tba evaluate: convert, judge and tabulate one run folder."""

from __future__ import annotations

HELP = """\
Turns a run folder into its leaderboard row: converts every group's answer files (StableToolBench's
converted format), judges them with the StableToolBench decision procedure (--evaluate-times repeats,
cached), scores SoPR (upstream: answered queries; strict: the whole test set) and writes the leaderboard and
the error taxonomy (status codes and parse error kinds per group) under RUN/tables. A run whose queries
ended in infrastructure failures (see tba run --help) is refused until they are redone, unless
--score-anyway: then the row is marked \u2020 with a footnote. The judge is named in
every table. Judges: --judge-backend openai (any OpenAI-compatible endpoint: --judge-url, --judge-model) or
hf (a local transformers model, prompt-driven JSON; the offline default judges with the same small model
that ran, and the table says so). --executor ray judges on a Ray cluster (--ray-address, else a local one):
the uncached answers of each group go out as Ray tasks, a batch each, every worker rebuilding the judge from
these flags; this process keeps the progress bar, the cache and every file, so the files are the same as
under threads."""


def register(subparsers) -> None:
    import argparse

    from ._common import add_judge_url

    p = subparsers.add_parser("evaluate", help="convert, judge and tabulate a run folder", description=HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a folder written by tba run")
    p.add_argument("--judge-backend", default="openai", help="openai (default) or hf (local model)")
    p.add_argument("--judge-model", default=None, help="judge model (openai: served name; hf: local folder)")
    add_judge_url(p)  # repeatable: several endpoints serving the same judge
    p.add_argument("--judge-api-key", default=None)
    p.add_argument("--judge-mode", choices=("auto", "json", "tools"), default="auto",
                   help="tools = forced tool call; json = prompt-driven JSON; auto = by the judge's abilities")
    p.add_argument("--judge-prefill", action="store_true",
                   help="openai judge on vLLM/SGLang: start the verdict for the model (continue_final_message); "
                   "helps small served models answer in JSON. Always on for the hf judge")
    p.add_argument("--judge-max-tokens", type=int, default=None,
                   help="verdict token budget (default: the evaluator's config, 1000 for the project's own)")
    p.add_argument("--judge-timeout", type=float, default=None, help="seconds per judge request (openai; default 60)")
    p.add_argument("--evaluator", default=None, help="evaluator folder or name (default: the project's own)")
    p.add_argument("--evaluators-dir", default=None, help="where evaluator names are looked up")
    p.add_argument("--evaluate-times", type=int, default=3, help="independent judgements per query (default 3)")
    p.add_argument("--concurrency", type=int, default=4, help="judge requests in flight (default 4)")
    p.add_argument("--executor", choices=("threads", "ray"), default="threads",
                   help="threads of this process (default) or ray: judge request batches as tasks of a Ray "
                   "cluster (pip install -e '.[ray]')")
    p.add_argument("--ray-address", default=None,
                   help="executor ray: the cluster to join, e.g. auto or ray://head:10001 (default: start a "
                   "local one for this evaluation)")
    p.add_argument("--cache", default="results/cache/judge.jsonl", help="judgement cache file")
    p.add_argument("--model-label", default=None, help="row name in the tables (default: the run's name)")
    p.add_argument("--score-anyway", action="store_true",
                   help="score a run that holds infrastructure failures (refused otherwise, exit 2); the table "
                   "marks its row with \u2020 and a footnote")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def run(args) -> int:

    from ..evaluate import evaluate_run, infra_failure_note
    from ..judge_ray import ChatRecipe, RayJudgeExecutor
    from ._common import judge_model_from_args, judge_urls

    infra_failure_note(args.run_dir, args.score_anyway)  # refuse before a judge is loaded or asked
    model = judge_model_from_args(args)
    options = {}
    if args.judge_backend == "openai":
        options["accepts_prefill"] = args.judge_prefill
        if args.judge_timeout:
            options["timeout"] = args.judge_timeout
    chat = ChatRecipe(args.judge_backend, model, judge_urls(args), args.judge_api_key, options)
    executor = RayJudgeExecutor(chat, args.concurrency, args.ray_address) if args.executor == "ray" else None
    client = chat.build()
    try:
        result = evaluate_run(args.run_dir, client, evaluator=args.evaluator, evaluators_dir=args.evaluators_dir,
                              max_tokens=args.judge_max_tokens, mode=args.judge_mode,
                              evaluate_times=args.evaluate_times, concurrency=args.concurrency, cache_path=args.cache,
                              model_label=args.model_label, progress=not args.quiet,
                              score_anyway=args.score_anyway, executor=executor)
    finally:
        if executor is not None:
            executor.close()
    print(result.text)
    print("written: " + ", ".join(str(p) for p in result.written))
    return 0
