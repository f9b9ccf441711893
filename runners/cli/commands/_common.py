"""Flags shared by several commands."""

from __future__ import annotations

import argparse
import os
import shlex

from ..ranges import ATTEMPTS, SECONDS, WAIT_SECONDS, setting


def add_stb_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stb-root",
        default=None,
        help="StableToolBench checkout (holds solvable_queries/). Default: $TBA_STB_ROOT, else the sample "
        "set in data/ that ships with the project.",
    )
    parser.add_argument(
        "--tool-root",
        default=None,
        help="tool environment folder (toolenv/tools/{Category}/{tool}.json) for tool descriptions. "
        "Default: $TBA_TOOL_ROOT, else <stb-root>/toolenv/tools when present; without one the "
        "description line reads None, as upstream writes for an empty description.",
    )


def stb_root_arg(args: argparse.Namespace) -> str | None:
    return args.stb_root or os.environ.get("TBA_STB_ROOT") or None


def add_compat(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compat", choices=("stb", "strict"), default="stb",
                        help="stb (default) reproduces StableToolBench quirks that change numbers; strict "
                        "corrects them (see toolbench_adapter/compat.py)")


SIMULATOR_HELP = (
    "what answers a cache miss: schema (the default: offline and deterministic, synthetic answers, so numbers on it "
    "are not comparable with the leaderboard), llm (any OpenAI-compatible chat model, this project's prompt; the "
    "leaderboard's simulator is gpt-4-turbo at https://api.openai.com/v1), mirrorapi (a vLLM-served MirrorAPI model) "
    "or none (an error answer). llm and mirrorapi take the --llm-* flags; their endpoint must answer GET /models "
    "and list --llm-model before anything starts")


def add_simulator_flags(parser: argparse.ArgumentParser, *, temperature: bool = True) -> None:
    """What answers cache misses and the endpoint of the llm / mirrorapi simulator: one definition for tba serve,
    tba run (eval, serve-tools: the embedded server; RunConfig's settings of the same names) and tba doctor
    (``temperature`` False: it sends no simulation request). Every default is None: a run's comes from its config
    file or RunConfig, serve's and doctor's from SimulatorOptions.from_settings."""
    from toolbench_adapter.server.simulators.base import DEFAULT_API_KEY_ENV, DEFAULT_BASE_URL

    parser.add_argument("--simulator", default=None, metavar="NAME", help=SIMULATOR_HELP)
    parser.add_argument("--llm-base-url", default=None, metavar="URL",
                        help=f"llm / mirrorapi simulator: its OpenAI-compatible API root (default {DEFAULT_BASE_URL}; "
                        "OpenAI's: https://api.openai.com/v1)")
    parser.add_argument("--llm-model", default=None, metavar="NAME",
                        help="llm / mirrorapi simulator: the model id as the endpoint lists it (whole: it is recorded "
                        "and judged, the leaderboard's is gpt-4-turbo); part of a run's identity")
    parser.add_argument("--llm-api-key-env", default=None, metavar="VAR",
                        help=f"llm / mirrorapi simulator: the environment variable holding its API key (default "
                        f"{DEFAULT_API_KEY_ENV}); the key itself is never written anywhere")
    if temperature:
        parser.add_argument("--llm-temperature", type=setting("llm_temperature"), default=None, metavar="T",
                            help="llm / mirrorapi simulator: sampling temperature (default: llm 0, as upstream's "
                            "server; mirrorapi 0.1, as upstream's); part of a run's identity")
    parser.add_argument("--mirror-system-prompt", default=None, metavar="FILE",
                        help="mirrorapi: a file holding upstream's SFT_SYSTEM prompt (StableToolBench's "
                        "server/system_prompts.py; not shipped with this project). Without it a stand-in prompt is "
                        "used, and MirrorAPI's answers do not count as the leaderboard's")


def parse_options(pairs: list[str]) -> dict:
    """KEY=VALUE pairs -> dict; true/false become booleans."""
    from toolbench_adapter.errors import InputError

    options: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"option {pair!r} is not KEY=VALUE", field="--option", fix="write e.g. history=thought")
        options[key] = {"true": True, "false": False}.get(value.lower(), value)
    return options


def add_judge_flags(parser: argparse.ArgumentParser, *, evaluator_help: str, prefill_help: str) -> None:
    """The judge client, evaluator, cache and failure flags that tba judge, prefer and judge-audit share."""
    from toolbench_adapter.evaluation.judging.chat import CHAT_CLIENTS
    from toolbench_adapter.evaluation.judging.judge import JUDGES

    parser.add_argument("--judge-backend", default="openai",
                        help=f"chat client factory (registered: {', '.join(CHAT_CLIENTS.names())})")
    add_judge_url(parser)
    parser.add_argument("--judge-model", default=None,
                        help="judge model name (default: $TBA_JUDGE_MODEL, else gpt-4o-mini for the openai backend "
                        "and the local model for hf)")
    parser.add_argument("--judge-api-key", default=None, help="API key (default: $OPENAI_API_KEY)")
    parser.add_argument("--judge-mode", default="auto", choices=["auto", *JUDGES.names()],
                        help="tools = forced tool call, json = prompt-driven JSON; auto picks by the client")
    parser.add_argument("--judge-prefill", action="store_true", help=prefill_help)
    parser.add_argument("--evaluator", default="default", help=evaluator_help)
    parser.add_argument("--evaluators-dir", action="append", default=[], metavar="DIR",
                        help="where to look up evaluator names, e.g. <stb>/toolbench/tooleval/evaluators")
    parser.add_argument("--attempts", type=ATTEMPTS, default=3,
                        help="requests per verdict when the judge answers malformed (default 3)")
    add_judge_option(parser)
    parser.add_argument("--cache", default="results/cache/judge.jsonl", metavar="FILE",
                        help="judgement cache, shared by tba judge and tba prefer (default "
                        "results/cache/judge.jsonl)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--score-anyway", action="store_true",
                        help="write the scores even when judgements failed (no verdict after the retries): the "
                        "failed ones are left out of every denominator and counted in the score rows; the exit "
                        f"status stays {JUDGE_FAILURES_EXIT}")


JUDGE_FAILURES_EXIT = 3  # judgements failed: counted, not scored; the same command redoes them
JUDGE_OPTION_RANGES = {"retries": ATTEMPTS, "wait_min": WAIT_SECONDS, "wait_max": WAIT_SECONDS,
                       "timeout": SECONDS}  # the same ranges as the flags (--attempts, --judge-timeout)
JUDGE_OPTION_EXAMPLES = {"retries": 3, "wait_min": 1, "wait_max": 10, "timeout": 60}



def add_judge_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge-option", action="append", default=[], metavar="KEY=VALUE",
                        help="judge HTTP client (openai): retries (attempts per request, the first included; "
                        "default 3), wait_min / wait_max (backoff seconds, default 1 / 10), timeout (seconds per "
                        "request, default 60)")


def judge_client_options(args: argparse.Namespace) -> dict:
    """--judge-option pairs, typed and range-checked as the flags are (runners/cli/ranges.py); an unknown key or
    a bad value is exit 2 naming the keys."""
    from toolbench_adapter.errors import InputError

    options = {}
    for key, value in parse_options(getattr(args, "judge_option", None) or []).items():
        ranged = JUDGE_OPTION_RANGES.get(key)
        if ranged is None:
            raise InputError(f"unknown judge option {key!r}", field="--judge-option",
                             fix=f"use one of {', '.join(JUDGE_OPTION_RANGES)}, e.g. --judge-option retries=5")
        try:
            options[key] = ranged.read(key, str(value))
        except InputError as exc:
            raise InputError(f"judge option {key}={value}: {exc.problem}", field="--judge-option",
                             fix=f"write {ranged.words()}, e.g. --judge-option {key}={JUDGE_OPTION_EXAMPLES[key]}"
                             ) from None
    from toolbench_adapter.evaluation.judging.chat import WAIT_MAX_S, WAIT_MIN_S

    low, high = options.get("wait_min", WAIT_MIN_S), options.get("wait_max", WAIT_MAX_S)
    if low > high:  # the backoff would start above its own cap: one of the two is a typo
        raise InputError(f"judge options wait_min={low:g} and wait_max={high:g}: the first wait is above the "
                         "longest one", field="--judge-option",
                         fix=f"give wait_min at most wait_max, e.g. --judge-option wait_min={min(low, high):g} "
                         f"--judge-option wait_max={max(low, high):g}")
    return options


def redo_command(args: argparse.Namespace, fallback: list[str]) -> str:
    """The command as typed (runners/cli/main.py keeps it in args.argv): rerun as is, it redoes what failed."""
    return "tba " + shlex.join(getattr(args, "argv", None) or fallback)


def judge_failures_lines(failed: int, total: int, samples: list[str], redo: str, *, written: bool,
                         cached: bool = True, unit: str = "judgements", never: str = "Unsolved") -> list[str]:
    """What a judging command prints when judgements failed: how many, why, what was (not) written, the redo."""
    reasons = "; ".join(samples[:3]) or "no usable verdict"
    lines = [f"JUDGE FAILURES {failed} of {total} {unit}: no verdict after the judge client's retries (e.g. "
             f"{reasons}). They are left out of every score, never counted as {never}."]
    lines.append(f"  scores written anyway (--score-anyway): each row counts its failed {unit}"
                 if written else "  no score files or tables written (--score-anyway writes them, marked)")
    again = (f"cached verdicts are kept: only the failed {unit} are asked again" if cached else
             "without the cache every judgement is asked again")
    lines.append(f"  redo them ({again}): {redo}")
    return lines


def preflight_judge_args(client, probe=None) -> None:
    """The judge preflight (toolbench_adapter/evaluation/judging/preflight.py) before any work: exit 2 with the fix."""
    from toolbench_adapter.evaluation.judging.preflight import PREFLIGHT_PROMPT, preflight_judge

    preflight_judge(client, probe or (lambda: client.chat([{"role": "user", "content": PREFLIGHT_PROMPT}],
                                                          temperature=0, max_tokens=16)))


def prepare_judge_args(client, spec, mode: str, **options):
    """The judge, checked before any work (preflight.prepare_judge): served, its mode settled by asking the
    endpoint when auto, one request in its shape answered; exit 2 with the fix otherwise. Says which mode."""
    import sys

    from toolbench_adapter.evaluation.judging.preflight import prepare_judge

    judge = prepare_judge(client, spec, mode, **options)
    print(f"judge mode: {judge.mode} ({judge.mode_choice})", file=sys.stderr)
    return judge


def add_judge_url(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge-url", action="append", default=None, metavar="URL",
                        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1; repeat it for several "
                        "endpoints serving the same judge (requests go to the least busy one). Default: "
                        "$TBA_JUDGE_URL (several: comma-separated)")


def judge_urls(args: argparse.Namespace) -> list[str] | None:
    """--judge-url as given (one or several), else $TBA_JUDGE_URL split at commas, else None."""
    if args.judge_url:
        return list(args.judge_url)
    from_env = [url.strip() for url in os.environ.get("TBA_JUDGE_URL", "").split(",") if url.strip()]
    return from_env or None


def judge_model_from_args(args: argparse.Namespace) -> str | None:
    """--judge-model, else $TBA_JUDGE_MODEL, else gpt-4o-mini for openai; None lets hf pick the local model."""
    return (args.judge_model or os.environ.get("TBA_JUDGE_MODEL")
            or ("gpt-4o-mini" if args.judge_backend == "openai" else None))


def judge_client_from_args(args: argparse.Namespace):
    from toolbench_adapter.evaluation.cache import check_cache_path
    from toolbench_adapter.evaluation.judging.chat import build_chat_client

    # the first thing tba judge / prefer / judge-audit do: an unwritable --cache is exit 2 before any request
    uses_cache = not getattr(args, "no_cache", False) and getattr(args, "metric", "sopr") != "fac"  # FAC: uncached
    check_cache_path(getattr(args, "cache", None) if uses_cache else None)
    options = {"accepts_prefill": True} if args.judge_prefill and args.judge_backend == "openai" else {}
    if args.judge_backend == "openai":
        options.update(judge_client_options(args))
    return build_chat_client(args.judge_backend, model=judge_model_from_args(args), base_url=judge_urls(args),
                             api_key=args.judge_api_key, **options)


def add_judge_constrain(parser) -> None:
    """--judge-constrain for the commands that judge pass rates (evaluate, judge, judge-audit)."""
    parser.add_argument("--judge-constrain", action="store_true",
                        help="not upstream: constrained decoding of the judge's reply, so a local (hf) or vLLM judge "
                        "can only answer the evaluator's JSON with a label of its enum (json mode; with "
                        "--judge-mode tools it is exit 2); the judge is named '[json, constrained]' in tables and "
                        "its cache entries are its own")
