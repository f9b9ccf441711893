"""Parser cost on adversarial outputs: time and peak memory per parser as the input grows.

Usage: python benchmarks/bench_parsers_adversarial.py [--sizes 32000,128000,256000,1000000]
                                                      [--timeout 20] [--family NAME ...] [--parser NAME ...]

Each family builds a text of about the given number of characters that once drove a parser (or the JSON
ladder under it) into super-linear work; "escaped-quotes" is the one from issue 12
(``Action Input: {"`` followed by ``\\"`` repeated). Every case (parser, family, size) runs in its own
process: one parse is timed, then a second parse runs under tracemalloc for the peak memory (the
traced parse is slower; only the first is timed). A case that exceeds --timeout is stopped ("> T s")
and the larger sizes of that parser and family are skipped.
Near-linear growth shows as the time column growing like the size column. Texts over
``MAX_PARSE_CHARS`` are refused by every parser with the error kind ``input_too_large``.
Also reachable as ``python benchmarks/bench_parsers.py --adversarial``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import tracemalloc

DEFAULT_SIZES = (32_000, 128_000, 256_000, 1_000_000)


def _repeat(unit: str, size: int, head: str = "", tail: str = "") -> str:
    return head + unit * max(1, (size - len(head) - len(tail)) // len(unit)) + tail


# family name -> text of about `size` characters
FAMILIES = {
    "escaped-quotes": lambda n: _repeat('\\"', n, head='Thought: t\nAction: get\nAction Input: {"'),
    "deep-nesting": lambda n: _repeat('{"a": [', n, head="Action: get\nAction Input: "),
    "open-braces-one-line": lambda n: _repeat("Action Input: {", n, head="Action: get\n"),
    "unclosed-strings": lambda n: _repeat('"k', n, head="Action: get\nAction Input: {"),
    "hermes-blocks": lambda n: _repeat("<tool_call>{}", n),
    "json-tags": lambda n: _repeat("<tools_call>{", n, head="<think>"),
    "fences": lambda n: _repeat('```json\n{"name": "', n),
    "python-literal": lambda n: _repeat("1, ", n, head="Action: get\nAction Input: {'a': ["),
}


def _child(parser_name: str, family: str, size: int) -> None:
    from toolbench_adapter.parsers import get_parser

    parser = get_parser(parser_name)
    parser.parse("Action: x\nAction Input: {}")  # warm-up: imports, regex caches
    text = FAMILIES[family](size)
    started = time.perf_counter()
    turn = parser.parse(text)
    print(json.dumps({"seconds": time.perf_counter() - started, "error": turn.error.value}), flush=True)
    tracemalloc.start()  # a second parse under tracemalloc (which slows pure-Python code) for the peak
    parser.parse(text)
    print(json.dumps({"peak": tracemalloc.get_traced_memory()[1]}), flush=True)


def _run_case(parser_name: str, family: str, size: int, timeout: float) -> tuple[str, bool]:
    """(the row's figures, whether the timed parse finished in time)."""
    command = [sys.executable, __file__, "--child", parser_name, family, str(size)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    records = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    limit = f"> {timeout:g} s"
    if not records:
        return f"{limit:>11} {'-':>13}  (stopped)" if process.returncode == -9 else f"{'crashed':>11}", False
    timed = records[0]
    peak = f"{records[1]['peak'] / 2**20:>9.1f} MiB" if len(records) > 1 else f"{limit:>13}"
    return f"{timed['seconds']:>9.3f} s {peak}  {timed['error']}", True


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1], argv[2], int(argv[3]))
        return 0
    from toolbench_adapter.parsers import parser_names
    try:
        from toolbench_adapter.parsers.limits import MAX_PARSE_CHARS
    except ImportError:  # a tree from before the limit existed (for before/after figures)
        MAX_PARSE_CHARS = None

    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    options.add_argument("--timeout", type=float, default=20.0, help="seconds per case (one parser, family, size)")
    options.add_argument("--family", action="append", choices=sorted(FAMILIES))
    options.add_argument("--parser", action="append")
    args = options.parse_args(argv)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    print(f"python {sys.version.split()[0]}; MAX_PARSE_CHARS = {MAX_PARSE_CHARS}; timeout {args.timeout:g} s per case")
    print(f"{'parser':<13} {'family':<21} {'chars':>9} {'time':>11} {'peak mem':>13}  error kind")
    for family in args.family or list(FAMILIES):
        for name in args.parser or parser_names():
            finished = True
            for size in sizes:
                row, finished = _run_case(name, family, size, args.timeout) if finished else (
                    f"{'skipped':>11}   (a smaller size ran out of time)", False)
                print(f"{name:<13} {family:<21} {len(FAMILIES[family](size)):>9} {row}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
