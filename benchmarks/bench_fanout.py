"""The parser fan-out against N separate runs: model calls and wall time on the sample set.

The model is runners.models.react_script (deterministic ReAct text; on the queries whose id is divisible
by 3 a connective line follows the Action Input JSON, which react-find cannot read and react-robust and
react-regex can), answering after a fixed delay that stands for model time. For each parser set: the
model calls and wall time of one `tba run --parsers` fan-out, of N separate `--parser P` runs, and the
fan-out's calls as a multiple of one run's (the issue's goal: 4 parsers for at most 1.5x). The 4-parser set
adds hermes, whose format never matches ReAct text: its trajectory differs from the first turn on every
query, so nothing after that turn can be shared. Run with `make bench-fanout` (or python benchmarks/bench_fanout.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from runners.config import RunConfig  # noqa: E402
from runners.execution.fanout import run_fanout  # noqa: E402
from runners.execution.runner import Runner  # noqa: E402
from runners.models.react_script import react_script  # noqa: E402
from runners.models.scripted import ScriptedBackend  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SETS = {
    2: ["react-find", "react-robust"],
    3: ["react-find", "react-robust", "react-regex"],
    4: ["react-find", "react-robust", "react-regex", "hermes"],
}


def config(out_root: str, name: str, **changes) -> RunConfig:
    return RunConfig(name=name, out_root=out_root, backend="scripted", dialect="toolllama",
                     stb_root=str(ROOT / "data" / "sample"), tool_root=str(ROOT / "data" / "sample" / "toolenv" / "tools"),
                     **changes)


def separate_runs(out_root: str, parsers: list[str], delay_s: float) -> tuple[int, float, dict[str, int]]:
    calls: dict[str, int] = {}
    started = time.perf_counter()
    for parser in parsers:
        backend = ScriptedBackend(script=react_script, delay_s=delay_s)
        Runner(config(out_root, f"alone-{parser}", parser=parser), backend=backend, progress=False).run()
        calls[parser] = len(backend.requests)
    return sum(calls.values()), time.perf_counter() - started, calls


def fanout(out_root: str, parsers: list[str], delay_s: float) -> tuple[int, float]:
    backend = ScriptedBackend(script=react_script, delay_s=delay_s)
    started = time.perf_counter()
    result = run_fanout(config(out_root, "set"), parsers, backend=backend, progress=False)
    return result.model_calls, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-delay-ms", type=float, default=50.0, help="model time per call (default 50 ms)")
    args = parser.parse_args()
    delay_s = args.model_delay_ms / 1000
    with tempfile.TemporaryDirectory() as warm:  # imports and first server start out of the timings
        fanout(warm, SETS[2], 0.0)
    print(f"sample set (6 queries, 2 with a connective line after the JSON), CoT@1, model {args.model_delay_ms:.0f} ms/call")
    print(f"{'N':>2}  {'parsers':<44} {'fan-out calls':>13} {'separate calls':>14} {'x one run':>9} "
          f"{'fan-out s':>9} {'separate s':>10}")
    for n, parsers in SETS.items():
        with tempfile.TemporaryDirectory() as fan_dir, tempfile.TemporaryDirectory() as alone_dir:
            fan_calls, fan_s = fanout(fan_dir, parsers, delay_s)
            sep_calls, sep_s, per_parser = separate_runs(alone_dir, parsers, delay_s)
        one_run = per_parser[parsers[0]]
        print(f"{n:>2}  {','.join(parsers):<44} {fan_calls:>13} {sep_calls:>14} {fan_calls / one_run:>8.2f}x "
              f"{fan_s:>9.2f} {sep_s:>10.2f}")
    print("x one run: fan-out calls / the calls of one run (react-find alone); goal for 4 parsers: <= 1.5x")


if __name__ == "__main__":
    main()
