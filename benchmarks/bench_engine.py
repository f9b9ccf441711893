"""Queries per minute through the harness against a real serving engine, and the engine's own ceiling.

For each concurrency (default 1, 4, 8) the harness runs the same queries (openai-completions, toolllama
text prompt, CoT@1, the e2e SmolLM2 settings on a small budget) against the engine, with the embedded
tool server; every request it sends is recorded. Then exactly those requests are sent straight to the
engine at the same concurrency, with nothing between: no rendering, parsing, tool calls or files. That
replay is the ceiling: the engine's throughput on this very workload. harness/ceiling is the share of the
engine the harness gets (below 1 also because a query's calls depend on each other, so the last queries
of a run leave slots idle, which the replay does not).

By default it starts vLLM (CPU build, .venv-vllm, `make vllm`) on the local SmolLM2 and stops it at the
end; --base-url/--model measure an engine you run. Prints one table; `make bench-engine`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runners.config import RunConfig, load_yaml, select_queries  # noqa: E402
from runners.execution.runner import Runner  # noqa: E402
from runners.models.base import Completion, ModelRequest  # noqa: E402
from runners.models.local_model import default_cache_folder  # noqa: E402
from runners.models.openai_completions import OpenAICompletionsBackend  # noqa: E402
from runners.serving.e2e import CONFIG_DIR, SAMPLE_TOOL_ROOT, served_models  # noqa: E402
from runners.serving.engine import ManagedEngine, signals_raise, vllm_spec  # noqa: E402


class RecordingBackend:
    """The openai-completions backend, keeping every request body it sends (for the replay)."""

    def __init__(self, inner: OpenAICompletionsBackend):
        self.inner = inner
        self.name = inner.name
        self.accepts_messages = inner.accepts_messages
        self.supports_tools = inner.supports_tools
        self.bodies: list[dict] = []
        self.completion_tokens = 0
        self._lock = threading.Lock()

    @property
    def model(self):
        return self.inner.model

    def preflight(self) -> None:
        self.inner.preflight()

    def complete(self, request: ModelRequest) -> Completion:
        completion = self.inner.complete(request)
        with self._lock:
            self.bodies.append(self.inner.request_body(request))
            self.completion_tokens += completion.completion_tokens or 0
        return completion


def replay(base_url: str, bodies: list[dict], concurrency: int) -> tuple[float, int, int]:
    """The same requests straight to the engine: (seconds, completion tokens, failures)."""
    session_local = threading.local()

    def send(body: dict) -> tuple[int, bool]:
        session = getattr(session_local, "session", None) or requests.Session()
        session_local.session = session
        response = session.post(f"{base_url}/completions", json=body, timeout=600)
        if response.status_code != 200:
            return 0, False
        return int(response.json().get("usage", {}).get("completion_tokens") or 0), True

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        results = list(pool.map(send, bodies))
    return time.perf_counter() - started, sum(t for t, _ in results), sum(not ok for _, ok in results)


def workload(n: int, stb_root: str | None) -> list:
    """n queries: the first n of the StableToolBench G1 groups when present, else the sample set repeated."""
    cfg = RunConfig(stb_root=stb_root, groups=["G1_instruction", "G1_category", "G1_tool"] if stb_root else [])
    queries = select_queries(cfg)
    return [queries[i % len(queries)] for i in range(n)]


def measure(base_url: str, model: str, args, concurrency: int, queries: list, tmp: str) -> dict:
    settings = load_yaml(args.config)
    settings.update(name=f"c{concurrency}", out_root=tmp, concurrency=concurrency, base_url=base_url, model=model,
                    max_step=args.max_step, max_tokens=args.max_tokens, stb_root=args.stb_root,
                    tool_root=None if args.stb_root else str(SAMPLE_TOOL_ROOT), method="CoT@1")
    cfg = RunConfig(**settings)
    backend = RecordingBackend(OpenAICompletionsBackend(base_url=base_url, model=model, retries=0))
    runner = Runner(cfg, backend=backend, progress=False)
    runner.pending = lambda: (queries, 0)  # the same queries at every level, repeats allowed
    started = time.perf_counter()
    manifest = runner.run()
    harness_s = time.perf_counter() - started
    replay_s, replay_tokens, failures = replay(base_url, backend.bodies, concurrency)
    return {"concurrency": concurrency, "queries": len(queries), "calls": len(backend.bodies),
            "harness_qpm": len(queries) / harness_s * 60, "ceiling_qpm": len(queries) / replay_s * 60,
            "harness_tok_s": backend.completion_tokens / harness_s, "ceiling_tok_s": replay_tokens / replay_s,
            "failed": manifest["sessions"][-1].get("failed", 0) + failures,
            "median_query_s": manifest["totals"].get("median_query_wall_seconds") or float("nan")}


def print_table(rows: list[dict]) -> None:
    print(f"{'concurrency':>11} {'queries':>7} {'calls':>5} {'harness q/min':>13} {'ceiling q/min':>13} "
          f"{'harness/ceiling':>15} {'harness tok/s':>13} {'engine tok/s':>12} {'median query s':>14} {'failed':>6}")
    for r in rows:
        print(f"{r['concurrency']:>11} {r['queries']:>7} {r['calls']:>5} {r['harness_qpm']:>13.1f} "
              f"{r['ceiling_qpm']:>13.1f} {r['harness_qpm'] / r['ceiling_qpm']:>14.0%} {r['harness_tok_s']:>13.1f} "
              f"{r['ceiling_tok_s']:>12.1f} {r['median_query_s']:>14.1f} {r['failed']:>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", help="measure this running engine instead of starting vLLM")
    parser.add_argument("--model", help="served model id (default: the engine's first)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    parser.add_argument("--queries", type=int, default=8, help="queries per level (default 8)")
    parser.add_argument("--max-step", type=int, default=4, help="depth limit per query (default 4: two turns)")
    parser.add_argument("--max-tokens", type=int, default=64, help="tokens per model call (default 64)")
    parser.add_argument("--config", default=str(CONFIG_DIR / "e2e-smollm2-completions.yaml"))
    parser.add_argument("--stb-root", default=None, help="StableToolBench checkout (default: the sample set)")
    parser.add_argument("--compiled", action="store_true", help="let vLLM torch.compile (slower start)")
    args = parser.parse_args()
    queries = workload(args.queries, args.stb_root)
    engine = None
    with signals_raise():
        try:
            if args.base_url:
                base_url, model, label = args.base_url.rstrip("/"), args.model, f"engine at {args.base_url}"
                model = model or served_models(base_url)[0]
            else:
                spec = vllm_spec(default_cache_folder(), eager=not args.compiled)
                engine = ManagedEngine(spec, Path(tempfile.gettempdir()) / "tba-bench-engine.log").start()
                base_url, model = engine.base_url, spec.served_name
                label = f"{spec.label}, {'compiled' if args.compiled else 'eager'}, started in {engine.startup_seconds:.0f} s"
            print(f"{label}; {len(queries)} queries per level (CoT@1, max_step {args.max_step}, max_tokens "
                  f"{args.max_tokens}, {Path(args.config).name}); ceiling = the same requests replayed straight "
                  "to the engine at the same concurrency", flush=True)
            rows = []
            with tempfile.TemporaryDirectory() as tmp:
                for concurrency in args.concurrency:
                    rows.append(measure(base_url, model, args, concurrency, queries, tmp))
                    print(f"  concurrency {concurrency} done", flush=True)
            print_table(rows)
        finally:
            if engine is not None:
                engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
