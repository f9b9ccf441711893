"""Flags shared by several commands."""

from __future__ import annotations

import argparse
import os


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
    """The judge client, evaluator and cache flags that tba judge and tba prefer share."""
    from toolbench_adapter.evaluation.chat import CHAT_CLIENTS
    from toolbench_adapter.evaluation.judge import JUDGES

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
    parser.add_argument("--attempts", type=int, default=3,
                        help="requests per verdict when the judge answers malformed (default 3)")
    parser.add_argument("--cache", default="results/cache/judge.jsonl", metavar="FILE",
                        help="judgement cache, shared by tba judge and tba prefer (default "
                        "results/cache/judge.jsonl)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


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
    from toolbench_adapter.evaluation.chat import build_chat_client

    options = {"accepts_prefill": True} if args.judge_prefill and args.judge_backend == "openai" else {}
    return build_chat_client(args.judge_backend, model=judge_model_from_args(args), base_url=judge_urls(args),
                             api_key=args.judge_api_key, **options)
