"""tba run: queries x method x model x dialect x parser against a tool server."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
from dataclasses import fields

from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.scoring.counts import glossary
from toolbench_adapter.files.fileio import check_writable
from toolbench_adapter.runs.cost import NOT_SEEN
from toolbench_adapter.structured.describe import policy_text, turns_text

from ...config import RunConfig, load_yaml
from ...execution.interrupt import queries
from ...search.methods import known_forms
from ..ranges import setting
from ._common import add_simulator_flags, parse_options

EPILOG = """\
examples:
  tba run --name smol --backend hf                                   # offline default: sample queries, CoT@1
  tba run --name tl2 --backend openai-completions --base-url http://127.0.0.1:8000/v1 \\
          --model ToolLLaMA-2-7b-v2 --stb-root ../StableToolBench --groups G1_instruction --method DFS_woFilter_w2
  tba run --config run.yaml --concurrency 8                          # flags override the file

A run folder results/runs/NAME holds {group}/{query_id}_{method}.json (upstream raw answer format),
manifest.json, steps.jsonl (one line per environment step: parse error kind, JSON rung, status code, and
for tool calls the reply kind, HTTP status, attempts and latency), queries.jsonl (outcome, tokens, latency
per query), errors.jsonl and failed/. Re-running the same command resumes: finished queries are skipped.
Ctrl-C lets the queries in flight finish and starts no other (a rerun goes on from there); a second Ctrl-C
stops at once (the queries in flight are then not finished: the rerun redoes them). A run folder holds one
model, method and set of settings (another is refused, exit 2, also when the model comes from the endpoint),
one set of queries (a rerun whose queries differ from those recorded, by a digest of each query's text and
function list, is exit 2 before any model call; more groups or queries of the same data are fine), and one
command at a time: a second command on the same --name exits 2 naming the one that holds it (a lock
left by a killed command is taken over).

Each query ends either finished (the model's own success or failure; its answer file is written) or as an
infrastructure failure: model_endpoint (the model endpoint gave up after its retries), tool_server (a tool
call's reply was a timeout, reset, 5xx, cut or non-JSON body after the client's retries), replay_gap (the
replay backend had no recorded turn) or harness_error (a Python exception), and a malformed reply from the
model endpoint is a model_endpoint failure naming the endpoint. A request the endpoint refuses as longer
than the model's context is the model's limit, not a failure: that chain ends there (as upstream's), the
query finishes, and the summary counts it (context length). An infrastructure failure
stops that query at once, writes no answer file (its partial tree goes to failed/{group}/, a line to
errors.jsonl), and is redone by re-running the same command. After 10 such queries in a row
(--stop-after-infra-failures) no more are started: the rest are recorded as not started.

The summary at the end counts, over the whole run folder (the same words and numbers as --json, the
manifest's totals, the error taxonomy and tba report):
@@COUNTS@@
--json prints the same totals as one JSON object instead.

Exit status: 0 every query finished; 2 bad input (nothing run); 3 the run folder holds infrastructure
failures (re-run the same command to redo them); 1 an unexpected error.

The backend brings its natural dialect when --dialect is not given (scripted: openai-tools); a parser
that cannot read what the backend answers (native tool calls vs text) is refused with exit 2, and so is a
dialect the backend cannot take (chat messages to openai-completions, a text prompt to openai-chat, native
tools to hf).

Rate limits are per endpoint and shared by all threads: --backend-option rate_per_s=N for the model
endpoint (openai-completions, openai-chat), --server-rate N for the tool server.

Several endpoints per role: repeat --base-url (e.g. vLLM data-parallel replicas of one model) or --server;
each request goes to the endpoint with the fewest in flight, one that fails at the transport level is taken
out for a while and its request sent to another, and the manifest counts what each endpoint served and how
each failed (sessions[-1].endpoints). --executor ray runs the queries on Ray worker processes (a cluster
at --ray-address, or a local one): the same files, the driver keeps the progress bar, manifest and resume."""
EPILOG = EPILOG.replace("@@COUNTS@@", glossary())


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a model on the benchmark (resumable)", epilog=EPILOG,
                              description=f"Run queries through {known_forms()} and write answer files.",
                              formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    add_run_arguments(p)
    p.set_defaults(func=run)


def add_run_arguments(p, *, fanout: bool = True) -> None:
    """The run's flags (tba run; tba eval takes them too, without the fan-out and --json)."""
    p.add_argument("--config", help="YAML file with run settings (keys as the flags, with underscores)")
    p.add_argument("--name", help="run name: output goes to OUT_ROOT/NAME (default: default)")
    p.add_argument("--out-root", help="folder holding runs (default: results/runs)")
    p.add_argument("--stb-root", help="StableToolBench checkout (default: $TBA_STB_ROOT, else data/sample)")
    p.add_argument("--tool-root", help="tool environment folder for tool descriptions")
    p.add_argument("--groups", nargs="+", help="groups to run (default: all of the checkout)")
    p.add_argument("--query-ids", nargs="+", type=setting("query_ids"), help="only these query ids")
    p.add_argument("--limit", type=setting("limit"), help="at most N queries per group")
    p.add_argument("--method", help=f"{known_forms()}: any registered search method (default: CoT@1)")
    p.add_argument("--max-step", type=setting("max_step"), help="depth limit (default 12, as the published numbers; upstream code now 50)")
    p.add_argument("--max-query-count", type=setting("max_query_count"),
                   help="model-call cap per query: DFSDT stops there, CoT's re-asks (--on-invalid reask:N) too "
                   "(default 200)")
    p.add_argument("--backend", help="openai-completions, openai-chat, hf, replay or scripted (default: hf)")
    p.add_argument("--model", help="model name (served name, or a local folder for hf)")
    p.add_argument("--base-url", action="append", metavar="URL",
                   help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1; repeat it for several endpoints "
                   "serving the same model (requests go to the least busy one)")
    p.add_argument("--api-key", help="API key for the endpoint (default: none)")
    p.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                   help="backend setting, e.g. answers=DIR for replay (repeatable)")
    p.add_argument("--dialect", help="toolllama, openai-tools, json-object, jsonl or hermes (default: the "
                   "backend's natural dialect, else toolllama)")
    p.add_argument("--dialect-option", action="append", default=[], metavar="KEY=VALUE",
                   help="dialect setting, e.g. history=thought, template=chat, prefill='Thought: '")
    p.add_argument("--parser", help="output parser (default: the dialect's; toolllama: react-find)")
    if fanout:
        p.add_argument("--parsers", metavar="P1,P2,...", help="parser fan-out: one run folder per parser under "
                       "NAME/, model calls shared while trajectories agree (temperature 0 only); see "
                       "runners/execution/fanout.py")
    p.add_argument("--flavour", choices=("legacy", "current"), help="function format (default: current)")
    p.add_argument("--compat", choices=("stb", "strict"), help="upstream quirks (stb, default) or corrected")
    p.add_argument("--server", action="append", metavar="URL",
                   help="tool server /virtual URL (repeat it for several), or 'embedded' (default: start one "
                   "in-process)")
    add_simulator_flags(p)  # the embedded server's simulator: tba serve's flags, one definition
    p.add_argument("--cache-dir", help="embedded server: response cache folder (StableToolBench layout)")
    p.add_argument("--server-rate", type=setting("server_rate"), help="tool calls per second across the run (default: unpaced)")
    p.add_argument("--server-timeout", type=setting("server_timeout"), help="seconds per tool-server request (default 120)")
    p.add_argument("--server-attempts", type=setting("server_attempts"),
                   help="tries per tool call for timeouts, resets, 5xx and cut bodies (default 3)")
    p.add_argument("--stop-after-infra-failures", type=setting("stop_after_infra_failures"), metavar="N",
                   help="after N queries in a row end in infrastructure failures (a dead tool server or model "
                   "endpoint), start no more: the rest are recorded as not started and redone by a rerun "
                   "(default 10; 0: never stop)")
    p.add_argument("--max-tokens", type=setting("max_tokens"), help="generation budget per turn (default 1024)")
    p.add_argument("--temperature", type=setting("temperature"), help="sampling temperature (default 0)")
    p.add_argument("--concurrency", type=setting("concurrency"), help="queries in flight (default 1)")
    p.add_argument("--seed", type=setting("seed"), help="seed for call ids and fallbacks (default 42); trial i of "
                   "--trials runs with seed + i")
    p.add_argument("--trials", type=setting("trials"), metavar="K",
                   help="run every query K times as independent trials (default 1; at most 100: K x the model calls, "
                   "paid requests included): trial i in NAME/trial-i/ (upstream's answer-file layout, one folder "
                   "per trial) with seed + i, sent to endpoints that take a seed; tba evaluate NAME judges every "
                   "trial and reports SoPR over trials with its 95%% CI, pass@k, pass^k and the flip rate. A set-up "
                   "whose trials cannot differ (the scripted agent without answer_rate, hf, replay) is refused")
    p.add_argument("--shard", help="i/n: run every n-th query starting at the i-th; join with tba merge")
    # no choices: the names are the executor registry's (runners/execution/executors.py, or an entry point),
    # checked by the run with "did you mean" (exit 2)
    p.add_argument("--executor", metavar="NAME",
                   help="how queries are spread: threads of this process (default), ray (worker processes of a "
                   "Ray cluster: pip install -e '.[ray]'), or another registered executor")
    p.add_argument("--ray-address", help="executor ray: the cluster to join, e.g. auto or ray://head:10001 "
                   "(default: start a local one)")
    p.add_argument("--constrain", choices=("off", "schema"),
                   help="structured output, not upstream: schema = constrained decoding, the model can only write the "
                   "dialect's format with a listed function and arguments that fit its schema (a grammar per query: "
                   "hf through xgrammar, vLLM's structured outputs, OpenAI's response_format for json-object); "
                   "a backend that cannot constrain is refused before any query (default: off)")
    p.add_argument("--on-invalid", metavar="observe|reask:N",
                   help="a reply with no call, an unknown function or arguments that break the schema: observe "
                   "(default, upstream: the environment answers it) or reask:N (not upstream: the reply is discarded "
                   "and the model asked again, at most N times, with a message naming what was wrong and the format "
                   "expected; then observe). Every call is checked either way: steps.jsonl records its violations")
    p.add_argument("--agent", metavar="CMD",
                   help="an outside agent instead of a model: CMD (split as a shell would, never run through one) once "
                   "per query with the query's tools over MCP, its URL in $TBA_MCP_URL, the query in $TBA_QUERY, "
                   "$TBA_QUERY_ID and $TBA_GROUP; --max-step caps its tool calls per query. Exits non-zero: an "
                   "infrastructure failure (exit 3) naming it; no Finish: no final answer (Unsolved by rule)")
    p.add_argument("--agent-timeout", type=setting("agent_timeout"), metavar="S",
                   help="seconds an outside agent may take on one query; then it is stopped and its calls so far "
                   "are its answer (default 600)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    if fanout:
        p.add_argument("--json", action="store_true", help="print the totals as one JSON object, not as lines")


OPTION_SETTINGS = ("backend_options", "dialect_options")  # mappings: a flag's pairs are added, not swapped in


def flag_settings(args, below: dict | None = None) -> dict:
    """The run settings given as flags, over ``below`` (a config file's): a flag replaces its setting, and the
    --backend-option / --dialect-option pairs are added to the options there."""
    settings = dict(below or {})
    for f in fields(RunConfig):
        value = getattr(args, f.name, None)
        if value is not None and f.name not in OPTION_SETTINGS:
            settings[f.name] = value
    for name, pairs in (("backend_options", args.backend_option), ("dialect_options", args.dialect_option)):
        if pairs:
            settings[name] = {**settings.get(name, {}), **parse_options(pairs)}
    return settings


def config_from_args(args) -> RunConfig:
    settings = flag_settings(args, load_yaml(args.config) if args.config else {})
    args.max_tokens_from = ("--max-tokens" if args.max_tokens is not None else f"--config {args.config}"
                            if "max_tokens" in settings else None)
    if args.max_tokens_from is None:
        adopt_served_limits(settings, args)
    cfg = RunConfig(**settings)
    cfg.validate()
    return cfg


def adopt_served_limits(settings: dict, args) -> None:
    """A served model's run that sets no max_tokens takes the limit its server lists (tba serve-model: the
    model config's), not the 1,024 default: the served path used to generate 1,024 tokens a turn, cut."""
    from ...models.openai_http import OPENAI_BACKENDS, served_generation_of

    if settings.get("backend") not in OPENAI_BACKENDS:
        return
    served = served_generation_of(settings.get("base_url"), settings.get("model"), settings.get("api_key"))
    if served:
        settings["max_tokens"] = served["max_tokens"]
        args.max_tokens_from = f"the served model's config {served.get('config', '?')} (GET {served['url']})"


def print_limits(cfg: RunConfig, max_tokens_from: str | None, setup=None) -> None:
    """The generation limits a run uses, on stderr as it starts (stdout may be --json)."""
    from ...execution.preflight import make_backend, prepare, stop_strings
    from ...models.openai_http import OPENAI_BACKENDS

    if setup is None:
        try:
            setup = prepare(cfg, make_backend(cfg))
        except (InputError, ValueError, TypeError):
            return  # the run's own checks say what is wrong, in their order
    source = max_tokens_from or ("the default: the server lists no limit for the model"
                                 if cfg.backend in OPENAI_BACKENDS else "the default")
    stops = stop_strings(setup.backend, setup.dialect)
    print(f"generation limits: max_tokens {setup.cfg.max_tokens} per turn ({source}); stop "
          f"{', '.join(json.dumps(s) for s in stops) if stops else 'none'}; temperature {setup.cfg.temperature:g}",
          file=sys.stderr, flush=True)


def run(args) -> int:
    from ...execution.runner import Runner

    cfg = config_from_args(args)
    check_writable(cfg.run_dir)  # an unwritable --out-root is exit 2 before any query is spent
    redo = "tba " + shlex.join(getattr(args, "argv", None) or ["run", "--name", cfg.name])
    if getattr(args, "parsers", None):  # the parser fan-out (runners/execution/fanout.py)
        if cfg.trials > 1:  # the fan-out shares model calls at temperature 0: its trials would be one trial K times
            raise InputError("the parser fan-out (--parsers) shares model calls between parsers; trials need an "
                             "agent whose runs differ", field="--trials",
                             fix="run one set of trials per parser (--parser P --trials K), or a sweep with a parser "
                             "axis and trials: K")
        if cfg.executor != "threads":  # its model calls are shared through one in-process memo
            raise InputError("the parser fan-out (--parsers) runs on threads only", field="executor",
                             fix="leave --executor out, or run each parser as its own run")
        from ...execution.fanout import command

        with stopping_now_exits(redo), options_named_in_file(args):
            print_limits(cfg, args.max_tokens_from)
            return command(cfg, args.parsers, progress=not args.quiet, redo=redo, as_json=args.json)
    if cfg.trials > 1:  # a set of trials (runners/execution/trials.py)
        return run_trials(args, cfg, redo)
    try:
        with options_named_in_file(args):
            runner = Runner(cfg, progress=not args.quiet, command=redo)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), fix="check --dialect-option / --backend-option names and values") from None
    if runner.cfg.agent is None:  # an outside agent's model and its limits are its own
        print_limits(runner.cfg, args.max_tokens_from, runner.setup)
    with stopping_now_exits(redo):
        manifest = runner.run()
    totals = manifest["totals"]
    if getattr(args, "json", False):
        print(json.dumps({"run": str(cfg.run_dir), **totals, "redo": redo if totals["infra_failures"] else None},
                         indent=2))
    else:
        lines = summary_lines(manifest, str(cfg.run_dir), redo)
        # tba eval evaluates next by itself: its "next" is the evaluation that follows, not a command to type
        print("\n".join(lines[:-1] if getattr(args, "evaluates_next", False) and not totals["infra_failures"]
                        else lines))
    return EXIT_INFRA_FAILURES if totals["infra_failures"] else 0


def agent_outcomes_text(outcomes: dict, config: dict) -> str:
    """How an outside agent's finished queries ended, in words (runners/outside/drive.py's agent_outcome)."""
    words = {"finish": "called Finish", "no_finish": "exited without Finish (no final answer: Unsolved by rule)",
             "timeout": f"timed out (--agent-timeout {config.get('agent_timeout', '?')} s; the calls so far are its answer)",
             "call_cap": f"stopped at the call cap (--max-step {config.get('max_step', '?')} calls)"}
    parts = [f"{n} {words.get(kind, kind)}" for kind, n in outcomes.items()]
    return f"agent {config.get('agent')!r}: " + "; ".join(parts)


EXIT_INFRA_FAILURES = 3
EXIT_INTERRUPTED = 130  # as the shell reports a command ended by Ctrl-C


def run_trials(args, cfg: RunConfig, redo: str) -> int:
    """tba run --trials K: the set's trials, one after another; the same summary, per trial and for the set."""
    from ...execution.trials import TrialSet

    try:
        with options_named_in_file(args):
            trials = TrialSet(cfg, progress=not args.quiet, command=redo)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), fix="check --dialect-option / --backend-option names and values") from None
    print_limits(trials.setup.cfg, args.max_tokens_from, trials.setup)
    with stopping_now_exits(redo):
        record = trials.run()
    totals = record["totals"]
    if getattr(args, "json", False):
        print(json.dumps({"run": str(cfg.run_dir), "trials": record["trials"], **totals,
                          "redo": redo if totals["infra_failures"] else None}, indent=2))
    else:
        lines = trial_summary_lines(record, str(cfg.run_dir), redo)
        print("\n".join(lines[:-1] if getattr(args, "evaluates_next", False) and not totals["infra_failures"]
                        else lines))
    return EXIT_INFRA_FAILURES if totals["infra_failures"] else 0


@contextlib.contextmanager
def options_named_in_file(args):
    """A backend or dialect option that the --config file set and the backend or dialect refused: the error
    names the file and writes the fix as its YAML (one set by a flag keeps the flag's fix)."""
    from toolbench_adapter.errors import OptionError

    try:
        yield
    except OptionError as exc:
        flags = args.backend_option if exc.setting == "backend_options" else args.dialect_option
        if getattr(args, "config", None) and exc.key not in parse_options(flags or []):
            raise exc.in_file(args.config) from None
        raise


@contextlib.contextmanager
def stopping_now_exits(redo: str):
    """Ctrl-C: say how to go on. A second Ctrl-C (StopNow, the manifest already written) ends the process at once:
    a normal exit would wait for the worker threads still in their model or tool calls."""
    from ...execution.interrupt import StopNow, queries, speaker

    try:
        yield
    except StopNow as stop:
        unfinished = getattr(stop, "in_flight", [])
        print(f"{speaker(redo)}: stopped now; {queries(len(unfinished))} in flight "
              f"{'was' if len(unfinished) == 1 else 'were'} not finished "
              f"({', '.join(unfinished[:5])}{', ...' if len(unfinished) > 5 else ''}); rerunning the same command "
              f"redoes {'it' if len(unfinished) == 1 else 'them'} and skips the finished ones: {redo}", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        print(f"{speaker(redo)}: interrupted; the finished queries are kept, rerunning the same command goes on: "
              f"{redo}", file=sys.stderr)
        raise


def cost_line(totals: dict, config: dict | None = None) -> str:
    """Model calls, tokens per query and model latency p50 / p95 of the totals (issue 42; money: --prices, at
    tba evaluate / table / sweep)."""
    if (config or {}).get("agent"):  # an outside agent: its calls counted are tool calls, its model unseen
        return f"  cost: model calls, tokens and latency {NOT_SEEN}"
    count = totals.get("queries") or 0
    per = (lambda key: f"{totals.get(key, 0) / count:.1f}") if count else (lambda key: "0")
    p50, p95 = totals.get("model_latency_p50_s"), totals.get("model_latency_p95_s")
    latency = f"{p50:.3f} s / p95 {p95:.3f} s" if p50 is not None and p95 is not None else "not recorded"
    return (f"  cost: {totals.get('model_calls', 0)} model calls ({per('model_calls')} per query), "
            f"{per('prompt_tokens')} prompt and {per('completion_tokens')} completion tokens per query, "
            f"model latency p50 {latency}")


def trial_summary_lines(record: dict, set_dir: str, redo: str) -> list[str]:
    """The set's lines: what ran over every trial, each trial's counts, what failed, where the files are, what next."""
    totals, session = record["totals"], record["sessions"][-1]
    manifests = record.get("manifests") or []
    ran = sum((m.get("sessions") or [{}])[-1].get("ran", 0) for m in manifests)
    done = sum((m.get("sessions") or [{}])[-1].get("skipped_as_done", 0) for m in manifests)
    lines = [f"run {set_dir}: {record['trials']} trials, {totals.get('queries', 0)} query runs ({ran} ran now, "
             f"{done} already done) in {session.get('seconds', 0):.1f} s"]
    for index, (seed, trial) in enumerate(zip(record["seeds"], totals["trials"], strict=True)):
        lines.append(f"  trial-{index} (seed {seed}): finished {trial.get('finished', 0)} of {trial.get('queries', 0)}, "
                     f"valid {trial.get('valid', 0)}, answered {trial.get('answered', 0)}, "
                     f"infrastructure failures {trial.get('infra_failures', 0)}")
    failures = totals.get("infra_failures", 0)
    if failures:
        kinds = ", ".join(f"{kind} {n}" for kind, n in totals["infra_failures_by_kind"].items())
        lines.append(f"  INFRASTRUCTURE FAILURES {failures} ({kinds}): no answer file written; see each trial's "
                     "errors.jsonl and failed/")
        if session.get("halted"):
            lines.append(f"  STOPPED EARLY: {session['halted']}")
        lines.append(f"  redo them (finished queries are skipped): {redo}")
    else:
        lines.append("  infrastructure failures 0")
    lines.append(cost_line(totals, record.get("config")))
    lines += [f"  files: {set_dir}/trial-{{i}}/{{group}}/{{query_id}}_{{method}}.json (one run folder per trial, "
              f"upstream's layout), {set_dir}/trials.json",
              f"  next: tba evaluate {shlex.quote(set_dir)} (judges every trial)"
              + (" (after the redo, or with --score-anyway)" if failures else "")]
    return lines


def summary_lines(manifest: dict, run_dir: str, redo: str) -> list[str]:
    """A few readable lines: what ran, what finished, what failed and why, where the files are, what next."""
    totals, session = manifest["totals"], manifest["sessions"][-1]
    lines = [f"run {run_dir}: {queries(totals['queries'])} ({session.get('ran', 0)} ran now, "
             f"{session.get('skipped_as_done', 0)} already done) in {session.get('seconds', 0):.1f} s",
             f"  finished {totals['finished']}: valid {totals['valid']}, answered {totals['answered']}, "
             f"win {totals['win']} (not judged yet)"]
    failures = totals["infra_failures"]
    if failures:
        kinds = ", ".join(f"{kind} {n}" for kind, n in totals["infra_failures_by_kind"].items())
        lines.append(f"  INFRASTRUCTURE FAILURES {failures} ({kinds}): no answer file written; see "
                     f"{run_dir}/errors.jsonl and {run_dir}/failed/")
        if session.get("halted"):
            lines.append(f"  STOPPED EARLY: {session['halted']}")
        lines.append(f"  redo them (finished queries are skipped): {redo}")
    else:
        lines.append("  infrastructure failures 0")
    if totals.get("agent_outcomes"):
        lines.append("  " + agent_outcomes_text(totals["agent_outcomes"], manifest.get("config") or {}))
    if totals.get("context_length"):
        lines.append(f"  context length {totals['context_length']}: finished queries in which the model endpoint "
                     "refused a request as longer than the model's context (the chain ended there, as upstream's "
                     "does; steps.jsonl error context_length)")
    lines.append(cost_line(totals, manifest.get("config")))
    turns = turns_text(totals)  # every call checked against the function list (toolbench_adapter/structured/)
    if turns:
        lines.append(f"  {turns} ({policy_text(manifest.get('config'))}; steps.jsonl: violations)")
    lines += [f"  files: {run_dir}/{{group}}/{{query_id}}_{{method}}.json, manifest.json, steps.jsonl, queries.jsonl",
              f"  next: tba evaluate {shlex.quote(run_dir)}" + (" (after the redo, or with --score-anyway)"
                                                               if failures else "")]
    return lines
