"""Cache-hit throughput and latency of the embedded /virtual server versus upstream's design.

Two servers run side by side on loopback, each in its own process, over the same cache folder:

- embedded: ``tba serve --simulator none --no-save`` (cache listed once, files parsed on first use, kept)
- reread:   a small FastAPI app written here in upstream's style: a pydantic request model, and every
            request opens and json.loads the API's cache file (what StableToolBench's server/main.py does)
- ceiling:  the embedded server's own HTTP stack (FastAPI on uvicorn, the same settings, the body read the
            same way) answering every request with one constant cached answer: no parsing, no lookup. The
            embedded server's cache-hit throughput is reported as a share of it: what is left to gain
            inside the server rather than in the HTTP stack

A thread pool of keep-alive HTTP clients sends cache-hit requests in the upstream payload shape for a fixed
time; every answer is checked against the cache. Prints requests/s and each server's share of the ceiling,
p50 and p99 latency, the server process's CPU time per request (user + system, from /proc), and the ratios.
The clients share the machine's cores with the server: on 2 cores the figures move with the load, so
compare servers within one run. Where the time goes inside the server: benchmarks/profile_server.py.

    .venv/bin/python benchmarks/bench_server.py [--threads 8] [--seconds 6] [--rounds 3] [--apis 20] [--entries 300]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from fastapi import Request, Response  # module level: the route's annotations are resolved from here
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parent.parent
CATEGORY = "Bench"


# ---------------------------------------------------------------- the upstream-style server

class Info(BaseModel):
    """server/main.py's request model."""

    category: str
    tool_name: str
    api_name: str
    tool_input: str | dict
    strip: str
    toolbench_key: str


def serve_reread(cache_dir: str) -> None:
    """Upstream's per-request design, reduced to the cache path: parse, open the file, json.load, look up."""
    import uvicorn
    from fastapi import FastAPI

    from toolbench_adapter.naming import change_name, server_tool_folder, standardize, standardize_category
    from toolbench_adapter.server.runner import bind, url_of

    app = FastAPI()

    @app.post("/virtual")
    def virtual(info: Info):
        category = standardize_category(info.category)
        api_name = change_name(standardize(info.api_name)).split("_for_" + info.tool_name)[0]
        tool = server_tool_folder(info.tool_name, info.category)
        try:
            tool_input = json.loads(info.tool_input)
        except Exception:  # noqa: BLE001 (upstream's own leniency)
            tool_input = {} if info.tool_input == "" else info.tool_input
        path = os.path.join(cache_dir, category, tool, api_name + ".json")
        if os.path.exists(path):
            with open(path) as handle:
                cache = json.load(handle)
            if str(tool_input) in cache:
                return cache[str(tool_input)]
        return {"error": "miss", "response": ""}

    sock = bind("127.0.0.1", 0)
    print(f"serving {url_of(sock)}/virtual", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")).run(sockets=[sock])


def serve_ceiling(answer_file: str) -> None:
    """The ceiling: the embedded server's stack (create_app's route shape, runner.py's uvicorn settings)
    answering a constant body of a typical cached answer's size."""
    from fastapi import FastAPI

    from toolbench_adapter.server.limits import read_body_capped
    from toolbench_adapter.server.runner import bind, serve_forever, url_of

    body = Path(answer_file).read_text(encoding="utf-8")
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/virtual")
    async def virtual(request: Request) -> Response:
        await read_body_capped(request, 1 << 20)
        return Response(body, media_type="application/json")

    sock = bind("127.0.0.1", 0)
    print(f"serving {url_of(sock)}/virtual", flush=True)
    serve_forever(app, sock)


# ---------------------------------------------------------------- cache and load

def make_cache(folder: Path, apis: int, entries: int, seed: int = 7) -> list[tuple[dict, dict]]:
    """A synthetic cache in the upstream layout; returns (payload, expected answer) pairs."""
    rng = random.Random(seed)
    calls = []
    for a in range(apis):
        tool, api = f"tool{a}", f"api{a}"
        table = {}
        for e in range(entries):
            tool_input = {"query": f"term {e}", "page": e % 5}
            answer = {"error": "", "response": [{"id": rng.randrange(10**9), "title": f"result {e}-{i}",
                                                 "score": round(rng.random(), 4)} for i in range(8)]}
            table[str(tool_input)] = answer
            calls.append(({"category": CATEGORY, "tool_name": tool, "api_name": api,
                           "tool_input": json.dumps(tool_input), "strip": "truncate", "toolbench_key": ""}, answer))
        path = folder / CATEGORY / f"{tool}_for_{CATEGORY}" / f"{api}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(table, indent=2))
    return calls


def start(command: list[str]) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    line = process.stdout.readline()
    if not line.startswith("serving "):
        process.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return process, line.split()[1]


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def load(url: str, calls: list, threads: int, seconds: float, check: bool = True) -> dict:
    host_port = url.split("//")[1].split("/")[0]
    host, port = host_port.split(":")
    latencies: list[list[float]] = [[] for _ in range(threads)]
    wrong = [0] * threads
    stop_at = time.perf_counter() + seconds

    def worker(index: int) -> None:
        rng = random.Random(index)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        headers = {"Content-Type": "application/json", "toolbench_key": ""}
        while time.perf_counter() < stop_at:
            payload, expected = calls[rng.randrange(len(calls))]
            started = time.perf_counter()
            connection.request("POST", "/virtual", json.dumps(payload), headers)
            response = connection.getresponse()
            body = response.read()
            latencies[index].append(time.perf_counter() - started)
            if response.status != 200 or (check and json.loads(body) != expected):
                wrong[index] += 1
        connection.close()

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    began = time.perf_counter()
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    elapsed = time.perf_counter() - began
    return summary([x for per_thread in latencies for x in per_thread], elapsed, sum(wrong))


def summary(latencies: list[float], elapsed: float, wrong: int) -> dict:
    merged = sorted(latencies)
    return {"requests": len(merged), "rps": len(merged) / elapsed, "wrong": wrong, "elapsed": elapsed,
            "latencies": merged,
            "p50_ms": merged[len(merged) // 2] * 1000 if merged else 0.0,
            "p99_ms": merged[min(len(merged) - 1, int(len(merged) * 0.99))] * 1000 if merged else 0.0,
            "mean_ms": statistics.fmean(merged) * 1000 if merged else 0.0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=8, help="concurrent client threads (default 8)")
    parser.add_argument("--seconds", type=float, default=6.0, help="load time per server (default 6)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="the servers take turns this many times, seconds/rounds each (default 3)")
    parser.add_argument("--apis", type=int, default=20, help="cache files (default 20)")
    parser.add_argument("--entries", type=int, default=300, help="entries per cache file (default 300)")
    parser.add_argument("--serve-reread", metavar="DIR", help=argparse.SUPPRESS)  # internal: the reread server
    parser.add_argument("--serve-ceiling", metavar="FILE", help=argparse.SUPPRESS)  # internal: the ceiling
    args = parser.parse_args()
    if args.serve_reread:
        serve_reread(args.serve_reread)
        return 0
    if args.serve_ceiling:
        serve_ceiling(args.serve_ceiling)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench_server_") as tmp:
        cache = Path(tmp) / "cache"
        calls = make_cache(cache, args.apis, args.entries)
        constant = Path(tmp) / "constant.json"
        constant.write_text(json.dumps(calls[0][1], ensure_ascii=False), encoding="utf-8")
        size = sum(p.stat().st_size for p in cache.rglob("*.json")) / len(list(cache.rglob("*.json")))
        print(f"cache: {args.apis} files x {args.entries} entries (mean file {size / 1024:.0f} KiB); "
              f"{args.threads} client threads, {args.seconds:g} s per server in {args.rounds} turns, loopback, {os.cpu_count()} cores")
        servers = {
            "embedded (tba serve)": [sys.executable, "-m", "runners.cli", "serve", "--port", "0", "--cache",
                                     str(cache), "--simulator", "none", "--no-save"],
            "reread per request (upstream design)": [sys.executable, __file__, "--serve-reread", str(cache)],
            "ceiling (same HTTP stack, constant)": [sys.executable, __file__, "--serve-ceiling", str(constant)],
        }
        # all three started at once and loaded in turns (--rounds): a burst of other work on a shared machine
        # then falls on each server alike instead of on whichever ran at the time
        env_free = {k: v for k, v in os.environ.items() if k != "TBA_STB_ROOT"}
        os.environ.clear()
        os.environ.update(env_free)
        started = {}
        try:
            for name, command in servers.items():
                started[name] = start(command)
            runs: dict[str, list[tuple[dict, float | None]]] = {name: [] for name in servers}
            for name, (_, url) in started.items():  # warm-up: first touch of every file
                load(url, calls, args.threads, min(1.0, args.seconds), check=not name.startswith("ceiling"))
            for _ in range(args.rounds):
                for name, (process, url) in started.items():
                    check = not name.startswith("ceiling")  # the ceiling answers one constant body
                    cpu_before = cpu_seconds(process.pid)
                    result = load(url, calls, args.threads, args.seconds / args.rounds, check)
                    cpu_after = cpu_seconds(process.pid)
                    runs[name].append((result, None if cpu_before is None else cpu_after - cpu_before))
        finally:
            for process, _ in started.values():
                process.terminate()
                process.wait(timeout=10)
        results = {}
        for name, parts in runs.items():
            results[name] = result = summary([x for r, _ in parts for x in r["latencies"]],
                                             sum(r["elapsed"] for r, _ in parts), sum(r["wrong"] for r, _ in parts))
            cpu = [c for _, c in parts]
            result["cpu_us"] = (None if None in cpu or not result["requests"]
                                else sum(cpu) / result["requests"] * 1e6)
            result["rounds_rps"] = [r["rps"] for r, _ in parts]
        embedded, reread, ceiling = results.values()
        print(f"{'server':40s} {'req/s':>9s} {'of ceiling':>10s} {'p50 ms':>8s} {'p99 ms':>8s} "
              f"{'server CPU/req':>14s} {'requests':>9s} {'wrong':>6s}")
        for name, r in results.items():
            cpu = "n/a" if r["cpu_us"] is None else f"{r['cpu_us']:.0f} us"
            print(f"{name:40s} {r['rps']:9.1f} {r['rps'] / ceiling['rps']:10.0%} {r['p50_ms']:8.2f} "
                  f"{r['p99_ms']:8.2f} {cpu:>14s} {r['requests']:9d} {r['wrong']:6d}")
        print(f"ratio embedded / reread: {embedded['rps'] / reread['rps']:.2f}x requests/s, "
              f"p50 {reread['p50_ms'] / embedded['p50_ms']:.2f}x lower, p99 {reread['p99_ms'] / embedded['p99_ms']:.2f}x lower")
        shares = [e["rps"] / c["rps"] for (e, _), (c, _) in zip(runs[next(iter(runs))], runs[list(runs)[-1]],
                                                                   strict=True)]
        print("embedded / ceiling per round: " + ", ".join(f"{x:.0%}" for x in shares))
        print(f"embedded cache hits: {embedded['rps'] / ceiling['rps']:.0%} of the HTTP stack's ceiling "
              f"({embedded['rps']:.0f} of {ceiling['rps']:.0f} req/s; the rest is the server's own work per request)")
        return 1 if any(r["wrong"] for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
