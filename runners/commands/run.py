"""tba run: queries x method x model x dialect x parser against a tool server."""

from __future__ import annotations

import json
from dataclasses import fields

from toolbench_adapter.errors import InputError

from ..config import RunConfig, load_yaml
from ._common import parse_options

EPILOG = """\
examples:
  tba run --name smol --backend hf                                   # offline default: sample queries, CoT@1
  tba run --name tl2 --backend openai-completions --base-url http://127.0.0.1:8000/v1 \\
          --model ToolLLaMA-2-7b-v2 --stb-root ../StableToolBench --groups G1_instruction --method DFS_woFilter_w2
  tba run --config run.yaml --concurrency 8                          # flags override the file

A run folder results/runs/NAME holds {group}/{query_id}_{method}.json (upstream raw answer format),
manifest.json, steps.jsonl (one line per environment step: parse error kind, JSON rung, status code),
queries.jsonl (tokens, latency per query) and errors.jsonl. Re-running the same command resumes: finished
queries are skipped. Interrupting loses at most the queries in flight.

Rate limits are per endpoint and shared by all threads: --backend-option rate_per_s=N for the model
endpoint (openai-completions, openai-chat), --server-rate N for the tool server."""


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run a model on the benchmark (resumable)", epilog=EPILOG,
                              description="Run queries through CoT@N or DFS_woFilter_wN and write answer files.",
                              formatter_class=__import__("argparse").RawDescriptionHelpFormatter)
    p.add_argument("--config", help="YAML file with run settings (keys as the flags, with underscores)")
    p.add_argument("--name", help="run name: output goes to OUT_ROOT/NAME (default: default)")
    p.add_argument("--out-root", help="folder holding runs (default: results/runs)")
    p.add_argument("--stb-root", help="StableToolBench checkout (default: $TBA_STB_ROOT, else data/sample)")
    p.add_argument("--tool-root", help="tool environment folder for tool descriptions")
    p.add_argument("--groups", nargs="+", help="groups to run (default: all of the checkout)")
    p.add_argument("--query-ids", nargs="+", type=int, help="only these query ids")
    p.add_argument("--limit", type=int, help="at most N queries per group")
    p.add_argument("--method", help="CoT@N or DFS_woFilter_wN (default: CoT@1)")
    p.add_argument("--max-step", type=int, help="depth limit (default 12, as the published numbers; upstream code now 50)")
    p.add_argument("--max-query-count", type=int, help="DFSDT model-call cap (default 200)")
    p.add_argument("--backend", help="openai-completions, openai-chat, hf, replay or scripted (default: hf)")
    p.add_argument("--model", help="model name (served name, or a local folder for hf)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--api-key", help="API key for the endpoint (default: none)")
    p.add_argument("--backend-option", action="append", default=[], metavar="KEY=VALUE",
                   help="backend setting, e.g. answers=DIR for replay (repeatable)")
    p.add_argument("--dialect", help="toolllama, openai-tools, json-object, jsonl or hermes (default: toolllama)")
    p.add_argument("--dialect-option", action="append", default=[], metavar="KEY=VALUE",
                   help="dialect setting, e.g. history=thought, template=chat, prefill='Thought: '")
    p.add_argument("--parser", help="output parser (default: the dialect's; toolllama: react-find)")
    p.add_argument("--flavour", choices=("legacy", "current"), help="function format (default: current)")
    p.add_argument("--compat", choices=("stb", "strict"), help="upstream quirks (stb, default) or corrected")
    p.add_argument("--server", help="tool server /virtual URL, or 'embedded' (default: start one in-process)")
    p.add_argument("--simulator", help="embedded server: schema (default), llm, mirrorapi or none")
    p.add_argument("--cache-dir", help="embedded server: response cache folder (StableToolBench layout)")
    p.add_argument("--server-rate", type=float, help="tool calls per second across the run (default: unpaced)")
    p.add_argument("--max-tokens", type=int, help="generation budget per turn (default 1024)")
    p.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    p.add_argument("--concurrency", type=int, help="queries in flight (default 1)")
    p.add_argument("--seed", type=int, help="seed for call ids and fallbacks (default 42)")
    p.add_argument("--shard", help="i/n: run every n-th query starting at the i-th; join with tba merge")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def config_from_args(args) -> RunConfig:
    settings = load_yaml(args.config) if args.config else {}
    for f in fields(RunConfig):
        value = getattr(args, f.name, None)
        if value is not None and f.name not in ("backend_options", "dialect_options"):
            settings[f.name] = value
    if args.backend_option:
        settings["backend_options"] = {**settings.get("backend_options", {}), **parse_options(args.backend_option)}
    if args.dialect_option:
        settings["dialect_options"] = {**settings.get("dialect_options", {}), **parse_options(args.dialect_option)}
    cfg = RunConfig(**settings)
    cfg.validate()
    return cfg


def run(args) -> int:
    from ..run import Runner

    cfg = config_from_args(args)
    try:
        runner = Runner(cfg, progress=not args.quiet)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), fix="check --dialect-option / --backend-option names and values") from None
    manifest = runner.run()
    totals = manifest["totals"]
    print(json.dumps({"run": str(cfg.run_dir), **totals}, indent=2))
    session = manifest["sessions"][-1]
    return 1 if session.get("failed") else 0
