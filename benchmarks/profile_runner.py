"""Where the harness's time goes per query: a sampling profile (py-spy) of the run bench_runner.py measures
(threads executor, scripted backend, the delayed stub tool server in its own process, concurrency 32),
summarised over the run's worker threads as the functions that take the most time, by own time and by time
including callees.

    .venv/bin/pip install py-spy   # once (the `bench` extra)
    .venv/bin/python benchmarks/profile_runner.py [--queries 256] [--concurrency 32] [--rate 400] [--top 30]
    .venv/bin/python benchmarks/profile_runner.py --gil            # Python's own work: the samples holding the GIL
    .venv/bin/python benchmarks/profile_runner.py --threads run    # the driver's Runner.run too, not only workers
    .venv/bin/python benchmarks/profile_runner.py --idle           # waits too: the model's sleep, the tool call

Without --gil or --idle, py-spy keeps the samples of threads it sees running; on a VM that includes threads
blocked in some system calls (fsync, a socket send, even the scripted model's sleep), so the shares are closer
to wall time than to CPU time. --gil keeps only the thread holding the GIL: the Python work that bench_runner's
"CPU ms/query" counts, without the kernel time of the system calls that release the GIL (creating files,
fsync, sockets: `perf record -g -p PID` shows those). --idle adds every waiting thread: a query's wall time.
The run is started under py-spy (py-spy is its parent, so no ptrace permission beyond the usual is needed); the
tool server's process is not sampled. Writes the folded stacks (py-spy's raw format, readable by flamegraph
tools and speedscope) to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
# which stacks a summary counts: a frame each must hold. workers: the thread pool's worker loop (the run's
# query threads); run: those and the driver's Runner.run (the main thread's share of the run); all: every stack
THREADS = {"workers": ("_worker (concurrent/futures/thread.py",),
           "run": ("_worker (concurrent/futures/thread.py", "Runner.run (runners/execution/runner.py"),
           "all": ("",)}


def workload(args: argparse.Namespace) -> None:
    """The profiled process: bench_runner's threads row at one concurrency."""
    from bench_runner import serve_in_subprocess, timed_run  # (it puts the project on sys.path)

    from runners.config import RunConfig
    from runners.execution.runner import Runner

    root = args.stb_root if Path(args.stb_root, "solvable_queries").is_dir() else None
    server, port = serve_in_subprocess(str(args.server_delay_ms))
    try:
        with tempfile.TemporaryDirectory() as tmp:
            def config(name: str) -> RunConfig:
                return RunConfig(name=name, out_root=tmp, stb_root=root, backend="scripted", dialect="openai-tools",
                                 backend_options={"delay_s": args.model_delay_ms / 1000},
                                 concurrency=args.concurrency, server=f"http://127.0.0.1:{port}/virtual",
                                 groups=["G1_instruction", "G1_category", "G1_tool"] if root else [])

            todo, _ = Runner(config("probe"), progress=False).pending()  # the imports and the query files
            todo = todo[: args.queries]
            cpu_started = time.process_time()
            elapsed = sum(timed_run(config(f"profiled-{n}"), todo) for n in range(args.rounds))
            cpu_s = time.process_time() - cpu_started
    finally:
        server.terminate()
        server.wait()
    figures = {"queries": len(todo) * args.rounds, "seconds": elapsed, "from": str(root or "data/sample"),
               "cpu_ms_per_query": cpu_s / (len(todo) * args.rounds) * 1000}
    Path(args.result).write_text(json.dumps(figures), encoding="utf-8")


def summarise(folded: Path, top: int, threads: str = "workers") -> str:
    """The shares over the stacks of ``threads`` (a key of THREADS), inclusive time per function."""
    from folded_stacks import summarise as summarise_stacks

    what = {"workers": "the worker threads", "run": "the run (worker threads and the driver's Runner.run)",
            "all": "every thread"}[threads]
    return summarise_stacks(folded, top, what=what, by_function=True,
                            keep=lambda frames: any(frame.startswith(THREADS[threads]) for frame in frames),
                            drop_frame=lambda frame: frame.startswith(("process ", "thread ")))


def main() -> int:
    from folded_stacks import add_sampling_options, find_py_spy

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stb-root", default=os.environ.get("TBA_STB_ROOT", "../shared/stabletoolbench"))
    parser.add_argument("--queries", type=int, default=256, help="profiled queries (default 256)")
    parser.add_argument("--concurrency", type=int, default=32, help="worker threads (default 32)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of --queries queries, one after the other (more samples; default 1)")
    parser.add_argument("--model-delay-ms", type=float, default=50.0)
    parser.add_argument("--server-delay-ms", type=float, default=20.0)
    add_sampling_options(parser, top=30, released_by="socket and file writes")
    parser.add_argument("--idle", action="store_true", help="sample waiting threads too (model sleep, tool calls)")
    parser.add_argument("--threads", choices=sorted(THREADS), default="workers",
                        help="the stacks summarised: workers (the query threads, default), run (those and the "
                             "driver's Runner.run), all (the whole process: imports and the query files too)")
    parser.add_argument("--out", default="/tmp/tba_runner_profile.folded", help="folded stacks written here")
    parser.add_argument("--workload", action="store_true", help=argparse.SUPPRESS)  # the profiled process
    parser.add_argument("--result", help=argparse.SUPPRESS)  # where it writes its figures
    args = parser.parse_args()
    if args.workload:
        workload(args)
        return 0
    py_spy = find_py_spy()
    result_file = Path(args.out).with_suffix(".json")
    child = [sys.executable, __file__, "--workload", "--result", str(result_file), "--stb-root", args.stb_root,
             "--queries", str(args.queries), "--rounds", str(args.rounds), "--concurrency", str(args.concurrency),
             "--model-delay-ms", str(args.model_delay_ms), "--server-delay-ms", str(args.server_delay_ms)]
    spy = subprocess.run([py_spy, "record", "--rate", str(args.rate), "--format", "raw", "--nonblocking",
                          *(["--gil"] if args.gil else []), *(["--idle"] if args.idle else []),
                          "--output", args.out, "--", *child], capture_output=True, text=True)
    if spy.returncode != 0:
        raise SystemExit(f"py-spy failed (exit {spy.returncode}): {(spy.stderr or spy.stdout).strip()[-800:]}")
    result = json.loads(result_file.read_text(encoding="utf-8"))
    print(f"{result['queries']} queries from {result['from']} at concurrency {args.concurrency}: "
          f"{result['seconds']:.2f} s, {result['cpu_ms_per_query']:.2f} ms CPU per query under py-spy "
          f"(load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores); folded stacks in {args.out}\n")
    print(summarise(Path(args.out), args.top, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
