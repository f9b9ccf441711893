"""What constrained decoding (--constrain schema) costs the hf backend: seconds per generated token with and
without the grammar, on the first turn of every sample query, for the toolllama dialect of the offline default
(runners/configs/smollm2.yaml) and for json-object. Prints the figures and the ratio; nothing here is a test.

A decode step is timed from one logits-processor call to the next (the model's forward pass, the grammar's token
mask and the stop-string check of that step), so the prompt's prefill is left out of the per-token figure; the
end-to-end figure (latency / generated tokens, prefill included) and the grammar's build and first compile are
printed beside it.

    .venv/bin/python benchmarks/bench_constrained.py [--limit N] [--max-tokens 256] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import time

import yaml

from runners.models import constrain
from runners.models.base import ModelRequest
from runners.models.hf import HFBackend, default_threads
from toolbench_adapter.dialects import make_dialect
from toolbench_adapter.messages import initial_messages
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.queryset.toolset import build_toolset
from toolbench_adapter.structured.grammar import reply_constraint

CONFIG = "runners/configs/smollm2.yaml"


class StepClock:
    """A logits processor that only notes when it is called: once per decode step."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def __call__(self, input_ids, scores):
        self.stamps.append(time.perf_counter())
        return scores

    def intervals(self) -> list[float]:
        return [b - a for a, b in zip(self.stamps, self.stamps[1:], strict=False)]


def timed_processors(clocks: list[StepClock]):
    """constrain.hf_logits_processors with a StepClock in front (the backend calls it once per generate)."""
    original = constrain.hf_logits_processors

    def wrapped(constraint, model, tokenizer):
        clock = StepClock()
        clocks.append(clock)
        return [clock, *(original(constraint, model, tokenizer) or [])]

    return wrapped


def requests(dialect_name: str, options: dict, limit: int | None, max_tokens: int):
    dialect = make_dialect(dialect_name, **options)
    for group in (queries := QuerySet(None)).available_groups():
        for query in queries.load(group)[:limit]:
            toolset = build_toolset(query, "current", tool_root="data/sample/toolenv/tools")
            rendered = dialect.render(initial_messages(toolset), toolset)
            started = time.perf_counter()
            constraint = reply_constraint(dialect_name, toolset, rendered.prefill, max_tokens)
            build_ms = (time.perf_counter() - started) * 1000
            base = dict(prompt=rendered.prompt, messages=rendered.messages, stop=rendered.stop, max_tokens=max_tokens,
                        extra={"prefill": rendered.prefill})
            yield constraint, build_ms, base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="queries per group (default: all of data/sample)")
    parser.add_argument("--max-tokens", type=int, default=256, help="generation budget per turn (default 256)")
    parser.add_argument("--threads", type=int, default=None, help=f"torch threads (default {default_threads()})")
    args = parser.parse_args()
    with open(CONFIG, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    backend = HFBackend(threads=args.threads)
    backend.preflight()
    model, tokenizer = backend._loaded()
    clocks: list[StepClock] = []
    constrain.hf_logits_processors = timed_processors(clocks)
    print(f"hf backend, SmolLM2-135M-Instruct, {backend.threads} torch thread(s), max_tokens {args.max_tokens}")
    ratios = []
    for dialect, options in (("toolllama", config.get("dialect_options") or {}), ("json-object", {})):
        steps = {"off": [], "schema": []}
        totals = {"off": [0.0, 0], "schema": [0.0, 0]}
        builds, compiles = [], []
        for constraint, build_ms, base in requests(dialect, options, args.limit, args.max_tokens):
            builds.append(build_ms)
            started = time.perf_counter()
            constrain.compiled(constraint, model, tokenizer)  # the first compile of this grammar (then cached)
            compiles.append((time.perf_counter() - started) * 1000)
            for variant in ("off", "schema"):
                extra = {**base["extra"], **({"constraint": constraint} if variant == "schema" else {})}
                completion = backend.complete(ModelRequest(**{**base, "extra": extra}))
                if completion.error:
                    raise SystemExit(f"generation failed: {completion.error}")
                steps[variant].extend(clocks[-1].intervals())
                totals[variant][0] += completion.latency_s
                totals[variant][1] += completion.completion_tokens
        per_token = {v: statistics.median(s) for v, s in steps.items()}
        ratio = per_token["schema"] / per_token["off"]
        ratios.append(ratio)
        print(f"\n{dialect}: {len(builds)} first turns; grammar build median {statistics.median(builds):.1f} ms, "
              f"first compile median {statistics.median(compiles):.0f} ms (cached after)")
        for variant in ("off", "schema"):
            seconds, tokens = totals[variant]
            print(f"  constrain {variant:<6} decode {per_token[variant] * 1000:7.1f} ms/token (median of "
                  f"{len(steps[variant])} steps); end to end {seconds / max(tokens, 1):.3f} s/token "
                  f"({tokens} tokens, prefill included)")
        print(f"  constrained / unconstrained seconds per generated token: {ratio:.2f}x")
    print(f"\nworst ratio {max(ratios):.2f}x (target: at most 1.3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
