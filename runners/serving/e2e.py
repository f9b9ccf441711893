"""End to end on a real serving engine: start it, run, evaluate, tabulate, always stop it.

``python -m runners.serving.e2e`` (``make e2e``) starts vLLM (CPU build, .venv-vllm) on the local SmolLM2 folder, or the
project's own OpenAI-compatible server in front of the hf backend (``--engine hf``, ``make e2e-light``), on a
free loopback port; or, with ``--base-url``, uses an engine the user already runs (e.g. vLLM serving
ToolLLaMA-2-7b-v2 on a GPU machine) and starts nothing. Then, for each backend (openai-completions with the
toolllama text prompt, openai-chat) and each method, ``tba run`` and ``tba evaluate`` run as the user would run
them, the served model judging (labelled as such). The engine is stopped and its port checked free whatever
happens: a failed step, Ctrl-C, SIGTERM; the kernel stops it if this process is killed outright.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import requests

from toolbench_adapter.files.fileio import write_json_atomic
from toolbench_adapter.runs.folder import MANIFEST

from ..models.local_model import convert_default_model, default_cache_folder, is_converted
from .engine import (
    DEFAULT_VLLM_PYTHON,
    EngineError,
    ManagedEngine,
    command_spec,
    hf_server_spec,
    port_is_free,
    signals_raise,
    vllm_spec,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = PROJECT_ROOT / "runners" / "configs"
BACKENDS = ("openai-completions", "openai-chat")
BACKEND_CONFIG_SUFFIX = {"openai-completions": "completions", "openai-chat": "chat"}
DEFAULT_METHODS = ("CoT@1", "DFS_woFilter_w2")
DEFAULT_CONSTRAINED_METHOD = "CoT@1"
DEFAULT_GROUPS = ("G1_instruction", "G2_instruction", "G3_instruction")
# the judge's evaluator folder per profile (a short answer budget for a small served judge)
PROFILE_EVALUATOR = {"smollm2": CONFIG_DIR / "e2e-judge"}
# one answered query (project-written, converted format): judged every time, so the judge round trip through
# the engine is proven even when no run query ends with a final answer (common with a 135M model)
JUDGE_PROBE = CONFIG_DIR / "e2e-judge" / "probe" / "judge-probe" / "G1_instruction.json"
SAMPLE_TOOL_ROOT = PROJECT_ROOT / "data" / "sample" / "toolenv" / "tools"
JUDGE_NOTE = ("judge: the served model itself ({model}), prompt-driven JSON verdicts, not the leaderboard's GPT "
              "judge: these pass rates prove the pipeline, they do not rank the model")


@dataclass
class Step:
    name: str
    command: list[str]
    returncode: int | None = None
    seconds: float = 0.0


@dataclass
class Outcome:
    engine: str
    base_url: str
    model: str
    out_dir: str
    engine_start_seconds: float | None = None
    steps: list[Step] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    judge_probe: dict = field(default_factory=dict)
    port_freed: bool | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and all(s.returncode == 0 for s in self.steps) and self.port_freed is not False


def tba(*arguments: str) -> list[str]:
    return [sys.executable, "-m", "runners.cli", *arguments]


def config_path(profile: str, backend: str) -> Path:
    path = CONFIG_DIR / f"e2e-{profile}-{BACKEND_CONFIG_SUFFIX[backend]}.yaml"
    if not path.exists():
        known = sorted({p.stem.split("-")[1] for p in CONFIG_DIR.glob("e2e-*-*.yaml")})
        raise SystemExit(f"e2e: no config {path.name} for profile {profile!r}; known profiles: {', '.join(known)}")
    return path


def served_models(base_url: str) -> list[str]:
    response = requests.get(f"{base_url.rstrip('/')}/models", timeout=10)
    response.raise_for_status()
    return [entry["id"] for entry in response.json().get("data", [])]


def run_step(outcome: Outcome, name: str, command: list[str]) -> Step:
    """One `tba` command, its output streamed through; a failure is recorded, never raised."""
    print(f"\n=== {name}\n$ {' '.join(command)}", flush=True)
    step = Step(name, command)
    started = time.monotonic()
    step.returncode = subprocess.run(command, cwd=PROJECT_ROOT).returncode
    step.seconds = round(time.monotonic() - started, 1)
    print(f"--- {name}: exit {step.returncode} in {step.seconds} s", flush=True)
    outcome.steps.append(step)
    return step


def run_and_evaluate(args, outcome: Outcome, base_url: str, model: str) -> None:
    out_root = Path(outcome.out_dir)
    data_flags = ["--stb-root", args.stb_root] if args.stb_root else ["--tool-root", str(SAMPLE_TOOL_ROOT)]
    budget = [*(["--max-step", str(args.max_step)] if args.max_step else []),
              *(["--max-tokens", str(args.max_tokens)] if args.max_tokens else []),
              *(["--max-query-count", str(args.max_query_count)] if args.max_query_count else [])]
    # the unconstrained runs, then (--constrained-method) one run per backend with --constrain schema and its
    # judge with --judge-constrain: the engine's structured outputs end to end
    plan = [(backend, method, False) for backend in args.backends for method in args.methods]
    plan += [(backend, args.constrained_method, True) for backend in args.backends if args.constrained_method]
    for backend, method, constrained in plan:
        config = config_path(args.profile, backend)
        name = f"{backend}-{method.replace('@', '')}" + ("-constrained" if constrained else "")
        constrain = ["--constrain", "schema"] if constrained else []
        run = run_step(outcome, f"run {name}", tba(
            "run", "--config", str(config), "--name", name, "--out-root", str(out_root),
            "--backend", backend, "--base-url", base_url, "--model", model, "--method", method,
            "--groups", *args.groups, "--limit", str(args.limit), "--concurrency", str(args.concurrency),
            "--quiet", *constrain, *data_flags, *budget))
        run_dir = out_root / name
        record = {"name": name, "backend": backend, "method": method, "constrain": bool(constrained),
                  "config": str(config.relative_to(PROJECT_ROOT)), "run_exit": run.returncode,
                  "run_seconds": run.seconds}
        if (run_dir / MANIFEST).exists():
            record["totals"] = json.loads((run_dir / MANIFEST).read_text())["totals"]
        # 3: infrastructure failures (tba evaluate would refuse the run); the step already fails the e2e
        if run.returncode == 0 and record.get("totals", {}).get("queries"):
            evaluation = run_step(outcome, f"evaluate {name}", tba(
                "evaluate", str(run_dir), "--judge-backend", "openai", "--judge-url", base_url,
                "--judge-model", model, "--judge-self", "--judge-mode", "json",
                # a constrained verdict is the whole JSON reply: no prefill to continue
                *(["--judge-constrain"] if constrained else ["--judge-prefill"]),
                "--evaluate-times", str(args.evaluate_times),
                "--concurrency", str(args.concurrency), "--cache", str(out_root / "judge-cache.jsonl"),
                "--model-label", f"{model} via {backend}", "--quiet", *evaluator_flags(args)))
            record.update(evaluate_exit=evaluation.returncode, evaluate_seconds=evaluation.seconds,
                          **judge_counts(run_dir))
        outcome.runs.append(record)


def judge_probe(args, outcome: Outcome, base_url: str, model: str) -> None:
    """Judge the fixed answered query: at least one real verdict request to the served model."""
    out = Path(outcome.out_dir) / "judge-probe"
    step = run_step(outcome, "judge probe (a fixed answered query)", tba(
        "judge", "--converted", str(JUDGE_PROBE), "--out", str(out), "--group", "G1_instruction",
        "--model", "judge-probe", "--judge-backend", "openai", "--judge-url", base_url, "--judge-model", model,
        "--judge-mode", "json", "--judge-prefill", "--evaluate-times", "1", "--no-cache", "--no-progress",
        *evaluator_flags(args)))
    outcome.judge_probe = {"exit": step.returncode, **judge_counts(out.parent, out.name)}
    with contextlib.suppress(OSError, ValueError, StopIteration):
        labels = json.loads(next(out.glob("G1_instruction_judge-probe.json")).read_text())
        outcome.judge_probe["label"] = next(iter(labels.values()))["is_solved"]["0"]


def judge_counts(run_dir: Path, folder: str | None = None) -> dict:
    """Requests the judge got and failed, from the label metadata: the judge is only asked about queries
    that ended with a non-empty final answer, so with a weak model it may get none. ``folder``: where the labels
    are (default: the run's latest evaluation, kept under eval/JUDGE-ID)."""
    if folder is None:
        from toolbench_adapter.evaluation.evaluations import list_evaluations

        latest = list_evaluations(run_dir)[-1:]
        folder = str(latest[0].eval_dir.relative_to(run_dir)) if latest else "eval"
    metas = [json.loads(p.read_text()) for p in (run_dir / folder).glob("*.meta.json")]
    return {"judge_requests": sum(m.get("requests", 0) for m in metas),
            "judge_errors": sum(m.get("judge_errors", 0) for m in metas)}


def evaluator_flags(args) -> list[str]:
    evaluator = args.judge_evaluator or PROFILE_EVALUATOR.get(args.profile)
    return ["--evaluator", str(evaluator)] if evaluator else []


def summary_table(outcome: Outcome) -> str:
    header = ["run", "queries", "valid", "win", "valid turns", "model calls", "tokens", "judge requests/errors",
              "run s", "eval s", "exit run/eval"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run in outcome.runs:
        totals = run.get("totals", {})
        cells = [run["name"], totals.get("queries", 0), totals.get("valid", 0), totals.get("win", 0),
                 f"{totals.get('valid_turns', 0)}/{totals.get('model_turns', 0)}", totals.get("model_calls", 0), totals.get("total_tokens", 0),
                 f"{run.get('judge_requests', '-')}/{run.get('judge_errors', '-')}", run["run_seconds"],
                 run.get("evaluate_seconds", "-"), f"{run['run_exit']}/{run.get('evaluate_exit', '-')}"]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m runners.serving.e2e", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--engine", choices=("vllm", "hf"), default="vllm",
                   help="engine to start: vllm (.venv-vllm, `make vllm`) or hf (tba serve-model, the light path)")
    p.add_argument("--engine-command", help="start this engine instead (any OpenAI-compatible server, e.g. SGLang or "
                   "llama.cpp): a command line with {host} and {port}, serving --served-name")
    p.add_argument("--base-url", help="use this running engine instead of starting one (e.g. vLLM + ToolLLaMA)")
    p.add_argument("--model", help="served model id (default: the engine's first /v1/models entry)")
    p.add_argument("--model-folder", help="vllm: the model folder to serve (default: the local SmolLM2-135M-Instruct, "
                   "converted once into .cache/models as `make model` does)")
    p.add_argument("--served-name", default="SmolLM2-135M-Instruct", help="id the started engine serves")
    p.add_argument("--vllm-python", default=str(DEFAULT_VLLM_PYTHON), help="python of the vLLM environment")
    p.add_argument("--vllm-arg", action="append", default=[], help="extra vLLM flag (repeatable, e.g. --vllm-arg=--enforce-eager)")
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--compiled", action="store_true",
                   help="vllm: let it torch.compile (start ~200 s instead of ~65 s on 2 cores, ~25%% faster after)")
    p.add_argument("--profile", default="smollm2",
                   help="run settings runners/configs/e2e-PROFILE-{completions,chat}.yaml: smollm2 (format helps for "
                   "a small model) or toolllama (the upstream prompt, for ToolLLaMA-2-7b-v2)")
    p.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS))
    p.add_argument("--methods", nargs="+", default=list(DEFAULT_METHODS))
    p.add_argument("--constrained-method",
                   help="one more run per backend with this method, --constrain schema (the engine's structured "
                   "outputs: vLLM's grammar) and its judge with --judge-constrain (default: "
                   f"{DEFAULT_CONSTRAINED_METHOD} when this command starts vLLM, none otherwise, since other "
                   "engines may not constrain; '' for none)")
    p.add_argument("--groups", nargs="+", default=list(DEFAULT_GROUPS))
    p.add_argument("--limit", type=int, default=1, help="queries per group (default 1: 3 groups -> 3 per method)")
    p.add_argument("--stb-root", help="StableToolBench checkout (default: the sample set in data/sample)")
    p.add_argument("--max-step", type=int, help="override the config's depth limit")
    p.add_argument("--max-tokens", type=int, help="override the config's tokens per turn")
    p.add_argument("--max-query-count", type=int, help="override the DFSDT model-call cap")
    p.add_argument("--concurrency", type=int, default=3, help="queries in flight, and judge requests (default 3)")
    p.add_argument("--judge-evaluator", help="evaluator folder for the judge (default: runners/configs/e2e-judge for "
                   "the smollm2 profile, else the project's default evaluator)")
    p.add_argument("--evaluate-times", type=int, default=1, help="judgements per query (default 1)")
    p.add_argument("--out", default="results/e2e", help="runs go to OUT/<engine>-<time>/ (default results/e2e)")
    return p


def model_folder(args) -> str:
    """The folder vLLM serves; the default model is converted from its GGUF on first use (offline)."""
    if args.model_folder:
        return args.model_folder
    folder = default_cache_folder()
    if not is_converted(folder):
        print(f"converting the local SmolLM2-135M-Instruct into {folder} (once)", flush=True)
        convert_default_model(folder)
    return str(folder)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.constrained_method is None:  # only the vLLM this command starts is known to take structured outputs
        started_vllm = args.engine == "vllm" and not (args.base_url or args.engine_command)
        args.constrained_method = DEFAULT_CONSTRAINED_METHOD if started_vllm else ""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    label = "external" if args.base_url else "command" if args.engine_command else args.engine
    out_dir = (PROJECT_ROOT / args.out / f"{label}-{stamp}").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    for backend in args.backends:
        config_path(args.profile, backend)  # a wrong profile fails before an engine starts
    engine: ManagedEngine | None = None
    outcome = Outcome(engine=label, base_url=args.base_url or "", model=args.model or "", out_dir=str(out_dir))
    with signals_raise():
        try:
            if args.base_url:
                outcome.engine = f"external engine at {args.base_url}"
                outcome.model = args.model or served_models(args.base_url)[0]
            else:
                spec = (command_spec(args.engine_command, args.served_name) if args.engine_command else
                        hf_server_spec(args.served_name) if args.engine == "hf" else
                        vllm_spec(model_folder(args), args.served_name, python=args.vllm_python,
                                  max_model_len=args.max_model_len, eager=not args.compiled,
                                  extra=args.vllm_arg))
                engine = ManagedEngine(spec, out_dir / "engine.log")
                print(f"starting {spec.label} on {engine.base_url} (log: {engine.log_path})", flush=True)
                engine.start()
                outcome.engine, outcome.base_url, outcome.model = spec.label, engine.base_url, spec.served_name
                outcome.engine_start_seconds = round(engine.startup_seconds, 1)
                print(f"engine ready at {engine.base_url} (pid {engine.process.pid}) after "
                      f"{outcome.engine_start_seconds} s", flush=True)
            print(JUDGE_NOTE.format(model=outcome.model), flush=True)
            run_and_evaluate(args, outcome, outcome.base_url or args.base_url, outcome.model)
            judge_probe(args, outcome, outcome.base_url or args.base_url, outcome.model)
        except (EngineError, requests.RequestException) as exc:
            outcome.error = f"{type(exc).__name__}: {exc}"
        finally:
            if engine is not None:
                port = engine.port
                try:
                    engine.stop()
                except EngineError as exc:
                    outcome.error = outcome.error or str(exc)
                outcome.port_freed = port_is_free(port)
                print(f"engine stopped; port {port} {'free' if outcome.port_freed else 'STILL IN USE'}", flush=True)
            write_json_atomic(out_dir / "e2e-summary.json", {**asdict(outcome), "ok": outcome.ok}, fsync=True)
    print(f"\n=== end to end: {outcome.engine}, model {outcome.model}")
    print(JUDGE_NOTE.format(model=outcome.model))
    if outcome.engine_start_seconds is not None:
        print(f"engine start: {outcome.engine_start_seconds} s")
    print(summary_table(outcome))
    if outcome.runs and not any(run.get("judge_requests") for run in outcome.runs):
        print("note: the judge got no request from the runs: no query ended with a non-empty final answer")
    if outcome.judge_probe:
        probe = outcome.judge_probe
        print(f"judge probe (one fixed answered query): label {probe.get('label', '-')}, "
              f"{probe.get('judge_requests', 0)} request(s), {probe.get('judge_errors', 0)} error(s), exit {probe['exit']}")
    print(f"tables: {out_dir}/<run>/tables/ (leaderboard, taxonomy); summary: {out_dir / 'e2e-summary.json'}")
    if outcome.error:
        print(f"e2e: error: {outcome.error}", file=sys.stderr)
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the engine was stopped on the way out (see above)
        print("e2e: interrupted", file=sys.stderr)
        sys.exit(130)
