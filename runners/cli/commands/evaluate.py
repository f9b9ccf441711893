"""tba evaluate: convert, judge and tabulate one run folder."""

from __future__ import annotations

from ..ranges import CONCURRENCY, JUDGE_TOKENS, REPEATS, SECONDS

HELP = """\
Turns a run folder into its leaderboard row: converts every group's answer files (StableToolBench's
converted format), judges them with the StableToolBench decision procedure (--evaluate-times repeats,
cached), scores SoPR (upstream: the queries with an answer file; strict: the whole test set) and writes the leaderboard and
the error taxonomy (status codes and parse error kinds per group). A run whose queries ended in
infrastructure failures (see tba run --help), a run still running or an interrupted one (selected queries
never ran), is refused (exit 2, naming how many and the tba run command that redoes or finishes it) unless
--score-anyway: then the row is marked \u2020 with a footnote.

The judge: --judge-backend openai (any OpenAI-compatible endpoint: --judge-url, --judge-model, the key in
--judge-api-key or $OPENAI_API_KEY) or hf (a local transformers model, prompt-driven JSON; the offline
default's SmolLM2-135M judge is labelled on every table: a 135M judge checks the pipeline, not the model).
There is no default endpoint: without --judge-url the command exits 2. A judge that is the run's own model
(the same model name) is refused (exit 2) unless --judge-self, and then every table, CSV row and report
headline says self-judged. Before any work the judge is checked: it answers, serves --judge-model and
answers one test request in the judging's own shape (else exit 2 naming the flag to fix); --judge-mode auto
asks it once with a forced tool call and judges with tools if it answers with one, else with prompt-driven
JSON (the chosen mode and why are printed and recorded); --judge-mode tools on an endpoint that answers a
forced tool call with text is exit 2.

A judgement that still fails (the endpoint after the client's retries, --judge-option retries=N; or no usable
verdict) is no verdict: never scored as Unsolved, left out of every denominator and counted; the command
then exits 3 with the count and the command that redoes only those (cached verdicts are kept), and writes
the leaderboard only with --score-anyway (marked).

Each evaluation is kept apart under its judge's identity (model, endpoint, mode, repeats):
RUN/eval/JUDGE-ID/ (labels, scores, evaluation.json with the judge's full identity and how its mode was
chosen) and RUN/tables/JUDGE-ID/ (leaderboards), e.g. gpt-4o-mini@api.openai.com-tools-x3; RUN/evaluations.json
lists them; the error taxonomy is RUN/tables/taxonomy.*. The latest complete evaluation is the default of tba
table, tba report and tba compare-parsers (--judge-id shows another). Evaluating again with the same judge
rewrites only its own folders; a failed evaluation never replaces a complete one (it is kept as
JUDGE-ID.failed). --executor ray judges on a Ray cluster (--ray-address, else a local one): the uncached
answers of each group go out as Ray tasks, a batch each, every worker rebuilding the judge from these flags;
this process keeps the progress bar, the cache and every file, so the files are the same as under threads.

A set of trials (tba run --trials K: RUN/trial-0 ... RUN/trial-{K-1}) is judged trial by trial, each as a run (its
own RUN/trial-i/eval/JUDGE-ID), then as a set under the same JUDGE-ID: RUN/eval/JUDGE-ID/trials.json and
RUN/tables/JUDGE-ID/ (SoPR over trials with its 95% CI, clustered by query; pass@k and pass^k for k = 1..K; the
flip rate; how much of the spread is the agent's (trials) and how much the judge's (repeats)). Every trial must
have run (else exit 2 naming the tba run command that finishes the set, unless --score-anyway)."""


def register(subparsers) -> None:
    import argparse

    p = subparsers.add_parser("evaluate", help="convert, judge and tabulate a run folder", description=HELP,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", help="a folder written by tba run")
    add_judge_arguments(p)
    p.add_argument("--concurrency", type=CONCURRENCY, default=4, help="judge requests in flight (default 4)")
    p.add_argument("--executor", choices=("threads", "ray"), default="threads",
                   help="threads of this process (default) or ray: judge request batches as tasks of a Ray "
                   "cluster (pip install -e '.[ray]')")
    p.add_argument("--ray-address", default=None,
                   help="executor ray: the cluster to join, e.g. auto or ray://head:10001 (default: start a "
                   "local one for this evaluation)")
    p.add_argument("--cache", default="results/cache/judge.jsonl",
                   help="judgement cache file (shared: the same judge asks no answer twice)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def add_judge_arguments(p) -> None:
    """The judge's flags (tba evaluate; tba eval takes them too)."""
    from ._common import add_judge_constrain, add_judge_option, add_judge_url

    p.add_argument("--judge-backend", default="openai", help="openai (default) or hf (local model)")
    p.add_argument("--judge-model", default=None, help="judge model (openai: served name; hf: local folder)")
    add_judge_url(p)  # repeatable: several endpoints serving the same judge
    p.add_argument("--judge-api-key", default=None, help="the judge's API key (default: $OPENAI_API_KEY)")
    p.add_argument("--judge-self", action="store_true",
                   help="let the run's own model judge its answers (default: its model and endpoints, unless "
                   "--judge-model / --judge-url say otherwise); refused without this flag. Every table, CSV row "
                   "and report headline then says self-judged: not a StableToolBench number")
    p.add_argument("--judge", choices=("self",), default=None,
                   help="self: the same as --judge-self (make's JUDGE=self; another value is exit 2)")
    p.add_argument("--judge-mode", choices=("auto", "json", "tools"), default="auto",
                   help="tools = forced tool call; json = prompt-driven JSON; auto (default) = ask the judge once: a "
                   "forced tool call answered with one gives tools, else json (recorded in the evaluation)")
    p.add_argument("--judge-prefill", action="store_true",
                   help="openai judge on vLLM/SGLang: start the verdict for the model (continue_final_message); "
                   "helps small served models answer in JSON. Always on for the hf judge")
    add_judge_constrain(p)
    p.add_argument("--judge-max-tokens", type=JUDGE_TOKENS, default=None,
                   help="verdict token budget (default: the evaluator's config, 1000 for the project's own)")
    p.add_argument("--judge-timeout", type=SECONDS, default=None, help="seconds per judge request (openai; default 60)")
    add_judge_option(p)
    p.add_argument("--evaluator", default=None, help="evaluator folder or name (default: the project's own)")
    p.add_argument("--evaluators-dir", default=None, help="where evaluator names are looked up")
    p.add_argument("--evaluate-times", type=REPEATS, default=3, help="independent judgements per query (default 3)")
    p.add_argument("--model-label", default=None, help="row name in the tables (default: the run's name)")
    p.add_argument("--prices", default=None, metavar="FILE",
                   help="prices per model per million input and output tokens (YAML: models: {NAME: {input: N, "
                   "output: N}}, optional currency:): the leaderboard CSV's cost column in money; none is shipped or "
                   "guessed (without it: tokens, calls and latency only)")
    p.add_argument("--score-anyway", action="store_true",
                   help="score a run that holds infrastructure failures or was interrupted (refused otherwise, exit "
                   "2), and write the leaderboard although judgements failed (exit 3 still); the table marks its "
                   "row with \u2020 and a footnote per reason")


def run(args) -> int:
    import sys
    from pathlib import Path

    from toolbench_adapter.evaluation.cache import check_cache_path
    from toolbench_adapter.runs.cost import read_prices
    from toolbench_adapter.runs.trial_set import is_trial_set

    from ...judging.evaluate import check_run, evaluate_run, read_manifest
    from ...judging.judge_ray import RayJudgeExecutor
    from ._common import judge_client_options, redo_command

    args.judge_self = args.judge_self or args.judge == "self"
    judge_client_options(args)  # every judge number in range before the run folder is read
    if is_trial_set(args.run_dir):
        return run_set(args)
    checked = check_run(args.run_dir, args.score_anyway)  # refuse before a judge is loaded or asked (read once)
    check_cache_path(args.cache)  # an unwritable --cache is exit 2 now, not a traceback at the first verdict
    prices = read_prices(args.prices) if args.prices else None  # a bad price file too
    chat = chat_recipe(args, read_manifest(Path(args.run_dir)))
    executor = RayJudgeExecutor(chat, args.concurrency, args.ray_address) if args.executor == "ray" else None
    client = chat.build()
    redo = redo_command(args, ["evaluate", args.run_dir])
    print(judge_cost(Path(args.run_dir), checked[0], args.evaluate_times), file=sys.stderr, flush=True)
    try:
        result = evaluate_run(args.run_dir, client, evaluator=args.evaluator, evaluators_dir=args.evaluators_dir,
                              max_tokens=args.judge_max_tokens, mode=args.judge_mode,
                              judge_constrain=args.judge_constrain,
                              evaluate_times=args.evaluate_times, concurrency=args.concurrency, cache_path=args.cache,
                              model_label=args.model_label, progress=not args.quiet,
                              score_anyway=args.score_anyway, executor=executor, preflight=True,
                              judge_self=args.judge_self, checked=checked, command=redo, prices=prices)
    finally:
        if executor is not None:
            executor.close()
    return print_result(result, redo)


def run_set(args) -> int:
    """tba evaluate on a set of trials: every trial checked, then judged, then the set's figures and tables."""
    import sys
    from pathlib import Path

    from toolbench_adapter.evaluation.cache import check_cache_path
    from toolbench_adapter.runs.cost import read_prices

    from ...judging.evaluate import read_manifest
    from ...judging.evaluate_trials import check_set, evaluate_trials
    from ...judging.judge_ray import RayJudgeExecutor
    from ._common import redo_command

    checked = check_set(args.run_dir, args.score_anyway)  # every trial, before a judge is loaded or asked
    check_cache_path(args.cache)
    prices = read_prices(args.prices) if args.prices else None
    chat = chat_recipe(args, read_manifest(Path(checked[0][0])))
    executor = RayJudgeExecutor(chat, args.concurrency, args.ray_address) if args.executor == "ray" else None
    client = chat.build()
    redo = redo_command(args, ["evaluate", args.run_dir])
    print(cost_line(sum(_answers(folder, groups) for folder, (groups, _notes) in zip(checked[0], checked[1],
                                                                                     strict=True)),
                    args.evaluate_times, f"the {len(checked[0])} trials' answers"), file=sys.stderr, flush=True)
    try:
        result = evaluate_trials(args.run_dir, client, evaluator=args.evaluator, evaluators_dir=args.evaluators_dir,
                                 max_tokens=args.judge_max_tokens, mode=args.judge_mode,
                                 judge_constrain=args.judge_constrain, evaluate_times=args.evaluate_times,
                                 concurrency=args.concurrency, cache_path=args.cache, model_label=args.model_label,
                                 progress=not args.quiet, score_anyway=args.score_anyway, executor=executor,
                                 preflight=True, judge_self=args.judge_self, checked=checked, command=redo,
                                 prices=prices)
    finally:
        if executor is not None:
            executor.close()
    print(f"{len(result.trials)} trials judged, each as a run: " + ", ".join(
        f"trial-{i}: {t.evaluation_id}" for i, t in enumerate(result.trials)))
    return print_result(result, redo)


def print_result(result, redo: str) -> int:
    """The tables, the labels, the evaluation's id and files, and what failed (a run's or a set's)."""
    from ._common import JUDGE_FAILURES_EXIT, judge_failures_lines

    print(result.text)
    print(f"labels: {result.labels.text()}")  # upstream's rule apart from the judge's verdicts (evaluation/scoring/counts.py)
    identity = result.identity
    print(f"evaluation: {result.evaluation_id} (RUN/eval/{result.evaluation_id}, RUN/tables/{result.evaluation_id}); "
          f"judge {identity.label}; judge mode {identity.mode} ({result.mode_choice})")
    print("written: " + ", ".join(str(p) for p in result.written))
    if result.judge_failures:
        print("\n".join(judge_failures_lines(result.judge_failures, result.judgements, result.failure_samples, redo,
                                             written=bool(result.boards))))
        if result.default_id:
            print(f"  the run's default evaluation stays {result.default_id} (complete): tba table / report / "
                  "compare-parsers show it; this one is kept apart as " + result.evaluation_id)
        else:
            print("  the run has no complete evaluation yet")
        return JUDGE_FAILURES_EXIT
    return 0


def judge_cost(run_dir, groups: list[str], evaluate_times: int) -> str:
    """The cost line before the judging (passrate.cost_line): the run's answer files x --evaluate-times."""
    return cost_line(_answers(run_dir, groups), evaluate_times, "answers")


def cost_line(answers: int, evaluate_times: int, what: str) -> str:
    from toolbench_adapter.evaluation.judging import passrate

    return passrate.cost_line(answers * evaluate_times, f"{answers:,} {what} x {evaluate_times} repeats "
                              "(--evaluate-times)")


def _answers(run_dir, groups: list[str]) -> int:
    from pathlib import Path

    return sum(1 for group in groups for _ in (Path(run_dir) / group).glob("*.json"))


def chat_recipe(args, manifest: dict):
    """How to build the judge's chat client from the judge flags, for the run of ``manifest`` (--judge-self: its
    own model and endpoints)."""
    from ...judging.judge_ray import ChatRecipe
    from ._common import judge_client_options

    model, urls = judge_target(args, manifest)
    options = {}
    if args.judge_backend == "openai":
        options["accepts_prefill"] = args.judge_prefill
        options.update(judge_client_options(args))
        if args.judge_timeout:
            options["timeout"] = args.judge_timeout
    return ChatRecipe(args.judge_backend, model, urls, args.judge_api_key, options)


def judge_target(args, manifest: dict) -> tuple[str | None, list[str] | None]:
    """(judge model, judge URLs). --judge-self: the run's own model and endpoints unless given. Without a judge
    URL the openai judge has nowhere to go: exit 2 naming the flags (a served model never judges itself by
    default). An hf judge is checked here too (no URL; a model that is a local folder), so tba eval refuses a
    judge it cannot build before the run's model loads. Each fix names what works for this run: a run of a local
    model (make eval's) can be judged as make eval judges it, --judge-backend hf."""
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.evaluation.evaluations import run_endpoints_of, run_model_of

    from ...judging.evaluate import SELF_JUDGE_FIX
    from ._common import judge_model_from_args, judge_urls

    urls = judge_urls(args)
    if args.judge_backend == "hf":
        check_local_judge(args, manifest)
    if args.judge_self:
        if args.judge_backend != "openai":
            return args.judge_model or (manifest.get("config") or {}).get("model"), urls
        urls = urls or run_endpoints_of(manifest)
        if not urls:
            local = manifest.get("backend") == "hf"
            raise InputError(f"--judge-self: the run asked no model endpoint (backend {manifest.get('backend')}), "
                             "so its model cannot judge through one", field="--judge-self",
                             fix="its model is local: let it judge in this process, --judge-backend hf --judge-self "
                             "(every table says self-judged)" if local else
                             f"its model serves no endpoint: pass a judge of its own, {OWN_JUDGE}, or the local "
                             f"model as judge, --judge-backend hf ({PIPELINE_CHECK_WORDS})")
        return args.judge_model or run_model_of(manifest), urls
    if args.judge_backend == "openai" and not urls:
        raise InputError("no judge given: the openai judge needs --judge-url (or $TBA_JUDGE_URL); a run's model never "
                         "judges its own answers unless asked", field="--judge-url", fix=no_judge_fix(manifest,
                                                                                                      SELF_JUDGE_FIX))
    return judge_model_from_args(args), urls


OWN_JUDGE = "--judge-url URL --judge-model NAME (its key: --judge-api-key or OPENAI_API_KEY)"
PIPELINE_CHECK_WORDS = "SmolLM2-135M, as make eval judges: it checks the pipeline, not the model, and every table " \
                       "says so"


def no_judge_fix(manifest: dict, served_fix: str) -> str:
    """What to pass when no judge is given, for this run: a served model's run can also judge itself
    (``served_fix``); a local model's run (make eval's) or one that asked no endpoint cannot, through a URL."""
    from toolbench_adapter.evaluation.evaluations import run_endpoints_of

    if run_endpoints_of(manifest):
        return served_fix
    if manifest.get("backend") == "hf":
        return (f"judge it as make eval does, --judge-backend hf (the local {PIPELINE_CHECK_WORDS}), or with its own "
                f"local model, --judge-backend hf --judge-self, or pass a judge of its own: {OWN_JUDGE}")
    return f"pass a judge of its own: {OWN_JUDGE}, or the local model as judge: --judge-backend hf ({PIPELINE_CHECK_WORDS})"


def check_local_judge(args, manifest: dict) -> None:
    """An hf judge takes no URL and judges with a local model folder (or .gguf file): a served model's name
    (gpt-4o) is refused now, naming --judge-model, not after the run (field 'model': ... is not a local model
    folder, once the run's model had run)."""
    from toolbench_adapter.errors import InputError

    from ...models.local_model import resolve

    if getattr(args, "judge_url", None):
        raise InputError("--judge-url is given, but --judge-backend hf judges with a local model in this process: "
                         "the URL would be ignored", field="--judge-backend",
                         fix="pass --judge-backend openai to judge at that URL (with --judge-model, the name it "
                         "serves), or leave --judge-url out for a local judge")
    model = args.judge_model or ((manifest.get("config") or {}).get("model") if args.judge_self else None)
    if model:
        try:
            resolve(model)
        except InputError as exc:
            raise InputError(f"--judge-backend hf: {exc.problem}", field="--judge-model",
                             fix="an hf judge is a local model folder (save_pretrained) or .gguf file, never "
                             "downloaded; leave --judge-model out for SmolLM2, or judge with a served model: "
                             "--judge-backend openai --judge-url URL --judge-model NAME") from None
