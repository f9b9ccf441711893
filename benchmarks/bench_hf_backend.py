"""Figures for the hf backend on this machine: GGUF conversion time (with --convert), cached load time and
generated tokens per second. Prints them; nothing here is a test.

    .venv/bin/python benchmarks/bench_hf_backend.py [--convert] [--tokens 64] [--repeats 3] [--threads N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from runners.models import local_model
from runners.models.base import ModelRequest
from runners.models.hf import HFBackend, default_threads

PROMPT = [{"role": "user", "content": "Write a short story about a robot that learns to paint."}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--convert", action="store_true", help="also time a fresh GGUF conversion (into a temp folder)")
    parser.add_argument("--tokens", type=int, default=64, help="max new tokens per generation (default 64)")
    parser.add_argument("--repeats", type=int, default=3, help="generations to time (default 3)")
    parser.add_argument("--threads", type=int, default=None, help=f"torch threads (default {default_threads()})")
    args = parser.parse_args()

    import torch  # imported before timing, so the load figure is the load alone
    import transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    if args.convert:
        with tempfile.TemporaryDirectory() as scratch:
            seconds = local_model.convert_default_model(Path(scratch) / "converted")
        print(f"GGUF -> safetensors conversion: {seconds:.1f} s")

    folder = local_model.default_cache_folder()
    if not local_model.is_converted(folder):
        print(f"converting once into {folder} ...")
        local_model.convert_default_model(folder)
    start = time.perf_counter()
    local_model._load(local_model.ModelSource(folder), "float32")
    print(f"load from the converted cache: {time.perf_counter() - start:.2f} s ({folder})")

    backend = HFBackend(threads=args.threads)
    backend.preflight()
    backend.complete(ModelRequest(messages=PROMPT, max_tokens=4))  # warm-up
    rates = []
    for _ in range(args.repeats):
        completion = backend.complete(ModelRequest(messages=PROMPT, max_tokens=args.tokens))
        rates.append(completion.completion_tokens / completion.latency_s)
        print(f"  {completion.completion_tokens} tokens in {completion.latency_s:.2f} s "
              f"(prompt {completion.prompt_tokens} tokens) = {rates[-1]:.1f} tokens/s")
    print(f"hf backend, SmolLM2-135M-Instruct, {backend.threads} torch thread(s): "
          f"median {statistics.median(rates):.1f} tokens/s over {args.repeats} generations of {args.tokens}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
