"""Parse speed of every parser variant on the dev corpus: µs per parse, median and p90 over repeats.

Usage: python benchmarks/bench_parsers.py [--corpus FILE.jsonl] [--repeats N]
       python benchmarks/bench_parsers.py --adversarial [options of bench_parsers_adversarial.py]
Default corpus: data/parser_corpus/react_outputs.jsonl, real model outputs shipped with the project
(data/README.md); the team's larger dev corpus is --corpus ../shared/fixtures/react_outputs_dev.jsonl.

For each variant, each repeat times one pass over the whole corpus and divides by the number of texts;
the median and p90 are over repeats. Also prints react-robust / react-find on the well-formed texts
(notes not starting with MALFORMED), the figure the target "within 3x" refers to.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from toolbench_adapter.parsers import get_parser, parser_names

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "data" / "parser_corpus" / "react_outputs.jsonl"


def per_parse_us(parser, texts: list[str], repeats: int) -> list[float]:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        for text in texts:
            parser.parse(text)
        timings.append((time.perf_counter() - started) / len(texts) * 1e6)
    return timings


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def main() -> int:
    if "--adversarial" in sys.argv[1:]:  # time and peak memory on inputs that once grew super-linearly
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_parsers_adversarial import main as adversarial

        return adversarial([a for a in sys.argv[1:] if a != "--adversarial"])
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--corpus", default=str(DEFAULT_CORPUS))
    options.add_argument("--repeats", type=int, default=30)
    args = options.parse_args()
    path = Path(args.corpus)
    if not path.is_file():
        print(f"corpus not found: {path} (pass --corpus FILE.jsonl)", file=sys.stderr)
        return 2
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [r for r in records if isinstance(r, dict) and isinstance(r.get("text"), str)]
    texts = [r["text"] for r in records]
    well_formed = [r["text"] for r in records if not r.get("notes", "").startswith("MALFORMED")]
    if not texts or not well_formed or args.repeats < 1:
        print(f"{path}: needs JSONL records with a string \"text\" field, some with notes not starting with "
              f"MALFORMED (the well-formed ratio), and --repeats of at least 1", file=sys.stderr)
        return 2
    print(f"corpus: {path} ({len(texts)} texts, {len(well_formed)} well-formed), {args.repeats} repeats")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpu(s)")
    print(f"{'parser':<14} {'median us':>10} {'p90 us':>10}   (whole corpus, per parse)")
    for name in parser_names():
        parser = get_parser(name)
        per_parse_us(parser, texts[:20], 1)  # warm-up: imports, regex caches
        timings = per_parse_us(parser, texts, args.repeats)
        print(f"{name:<14} {statistics.median(timings):>10.2f} {p90(timings):>10.2f}")
    find, robust = get_parser("react-find"), get_parser("react-robust")
    find_us = statistics.median(per_parse_us(find, well_formed, args.repeats))
    robust_us = statistics.median(per_parse_us(robust, well_formed, args.repeats))
    print(f"well-formed texts: react-find {find_us:.2f} us, react-robust {robust_us:.2f} us, "
          f"ratio react-robust/react-find = {robust_us / find_us:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
