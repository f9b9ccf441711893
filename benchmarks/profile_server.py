"""Where the embedded server's time goes on cache hits: a sampling profile (py-spy) of `tba serve` under the
same load as bench_server.py, summarised as the functions that take the most time, by own time and by time
including callees.

    .venv/bin/pip install py-spy   # once
    .venv/bin/python benchmarks/profile_server.py [--seconds 8] [--threads 8] [--rate 400] [--top 25]

Writes the folded stacks (py-spy's raw format, readable by flamegraph tools and speedscope) to --out. py-spy
attaches to the server process; where the system forbids that (ptrace), run this as a user allowed to trace
the process, or inside a container started with --cap-add SYS_PTRACE.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import load, make_cache, start  # noqa: E402  (the benchmark's cache and load)
from folded_stacks import add_sampling_options, find_py_spy  # noqa: E402
from folded_stacks import summarise as summarise_stacks  # noqa: E402


def summarise(folded: Path, top: int) -> str:
    return summarise_stacks(folded, top, what="the server process (idle time included as it shows up in the "
                            "event loop)", no_samples="did py-spy attach to the server?")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=8, help="concurrent client threads (default 8)")
    parser.add_argument("--seconds", type=float, default=8.0, help="profiled load time (default 8)")
    parser.add_argument("--apis", type=int, default=20, help="cache files (default 20)")
    parser.add_argument("--entries", type=int, default=300, help="entries per cache file (default 300)")
    add_sampling_options(parser, top=25, released_by="socket writes, waking the thread pool")
    parser.add_argument("--out", default="/tmp/tba_server_profile.folded", help="folded stacks written here")
    args = parser.parse_args()
    py_spy = find_py_spy()
    with tempfile.TemporaryDirectory(prefix="profile_server_") as tmp:
        cache = Path(tmp) / "cache"
        calls = make_cache(cache, args.apis, args.entries)
        process, url = start([sys.executable, "-m", "runners.cli", "serve", "--port", "0", "--cache", str(cache),
                              "--simulator", "none", "--no-save"])
        try:
            load(url, calls, args.threads, 1.0)  # warm-up: every file parsed once, not profiled
            spy = subprocess.Popen([py_spy, "record", "--pid", str(process.pid), "--rate", str(args.rate),
                                    "--duration", str(int(args.seconds)), "--format", "raw", "--nonblocking",
                                    *(["--gil"] if args.gil else []),
                                    "--output", args.out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
            result: dict = {}
            loader = threading.Thread(target=lambda: result.update(load(url, calls, args.threads, args.seconds)))
            loader.start()
            _, errors = spy.communicate()
            loader.join()
            if spy.returncode != 0:
                raise SystemExit(f"py-spy failed (exit {spy.returncode}): {errors.strip()[-500:]}")
        finally:
            process.terminate()
            process.wait(timeout=10)
    print(f"load: {result['rps']:.0f} req/s over {args.seconds:g} s ({result['wrong']} wrong answers); "
          f"folded stacks in {args.out}\n")
    print(summarise(Path(args.out), args.top))
    return 1 if result["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
