"""Harness overhead: a model and a tool server that each answer after a fixed delay.

Every query makes 2 model calls and 1 tool call (call the first function, then Finish), so its ideal
time is 2*MODEL_DELAY + SERVER_DELAY and the ideal throughput at concurrency c is c / that (capped by the
number of queries). The gap between measured and ideal is the harness's own cost: rendering, parsing,
tree bookkeeping, JSON writing, HTTP to the tool server. Prints one table; run with `make bench-runner`.

Rows:
- threads: the default executor, every query in a thread of this one process.
- ray: --executor ray on a local Ray cluster (one worker process per core), after a warm-up run that starts
  the workers (cluster and worker start-up are printed apart: a sweep pays them once).
- endpoints: model endpoints of fixed capacity (each serves at most --capacity requests at once, each in
  --model-delay-ms) reached over HTTP by the openai-chat backend at the highest concurrency: one endpoint,
  then two (--base-url twice); the goal is close to twice the throughput.

CPU ms/query (threads rows): this process's CPU time per query, i.e. the harness's own work (the tool server
runs in another process and the scripted model only sleeps); ray rows leave it out (their work is done in
the worker processes).
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopback_json import JsonHandler, agent_message, chat_completion, serve  # noqa: E402

from runners.config import RunConfig  # noqa: E402
from runners.execution.runner import Runner  # noqa: E402


def delayed_server(delay_s: float) -> http.server.ThreadingHTTPServer:
    body = json.dumps({"error": "", "response": "ok"}).encode()

    class Handler(JsonHandler):
        def do_POST(self):  # noqa: N802 (http.server API)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            time.sleep(delay_s)
            self._send(body)

    return serve(Handler)


def fixed_capacity_model(capacity: int, delay_s: float) -> http.server.ThreadingHTTPServer:
    """An OpenAI-compatible endpoint that serves at most ``capacity`` requests at once (the rest wait), each
    taking ``delay_s``: a model replica with a fixed batch size."""
    slots = threading.BoundedSemaphore(capacity)

    class Handler(JsonHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            self._send({"object": "list", "data": [{"id": "bench", "object": "model"}]})

        def do_POST(self):  # noqa: N802 (http.server API)
            body = self._json_body()
            with slots:
                time.sleep(delay_s)
            self._send(chat_completion("bench", agent_message(body)))

    return serve(Handler)


def serve_in_subprocess(*args: str) -> tuple[subprocess.Popen, int]:
    """A server in its own process, so it does not compete with the harness for the GIL."""
    proc = subprocess.Popen([sys.executable, __file__, "--serve", *args], stdout=subprocess.PIPE, text=True)
    return proc, int(proc.stdout.readline())


def timed_run(cfg: RunConfig, todo: list, **options) -> float:
    runner = Runner(cfg, progress=False, **options)
    runner.pending = lambda: (todo, 0)
    started = time.perf_counter()
    manifest = runner.run()
    elapsed = time.perf_counter() - started
    if manifest["totals"]["finished"] != len(todo):
        raise SystemExit(f"{cfg.name}: only {manifest['totals']['finished']} of {len(todo)} queries finished")
    return elapsed


def row(label: str, concurrency: int, n: int, elapsed: float, ideal_query_s: float, cpu_s: float | None = None) -> str:
    rate = n / elapsed
    ideal = min(concurrency, n) / ideal_query_s
    waves = -(-n // concurrency)  # rounds of `concurrency` queries
    overhead_ms = (elapsed - waves * ideal_query_s) / (waves * 3) * 1000  # 3 steps per query
    cpu = f"{cpu_s / n * 1000:>14.2f}" if cpu_s is not None else f"{'-':>14}"
    return (f"{label:>9} {concurrency:>11} {rate:>10.1f} {ideal:>10.1f} {rate / ideal:>9.0%} {overhead_ms:>17.2f}"
            f" {cpu}")


def main() -> None:
    if len(sys.argv) >= 3 and sys.argv[1] == "--serve":
        if sys.argv[2] == "model":
            server = fixed_capacity_model(int(sys.argv[3]), float(sys.argv[4]) / 1000)
        else:
            server = delayed_server(float(sys.argv[2]) / 1000)
        print(server.server_address[1], flush=True)
        threading.Event().wait()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stb-root", default=os.environ.get("TBA_STB_ROOT", "../shared/stabletoolbench"))
    parser.add_argument("--queries", type=int, default=256,
                        help="queries per row (default 256: 8 rounds at concurrency 32, so start-up and the "
                        "last round weigh little)")
    parser.add_argument("--model-delay-ms", type=float, default=50.0)
    parser.add_argument("--server-delay-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--executors", nargs="+", default=["threads", "ray"], choices=("threads", "ray"))
    parser.add_argument("--capacity", type=int, default=4,
                        help="endpoints rows: requests one model endpoint serves at once (default 4)")
    parser.add_argument("--no-endpoints", action="store_true", help="skip the one-vs-two endpoints rows")
    args = parser.parse_args()
    root = args.stb_root if Path(args.stb_root, "solvable_queries").is_dir() else None
    server, port = serve_in_subprocess(str(args.server_delay_ms))
    url = f"http://127.0.0.1:{port}/virtual"
    ideal_query_s = (2 * args.model_delay_ms + args.server_delay_ms) / 1000
    groups = ["G1_instruction", "G1_category", "G1_tool"] if root else []
    print(f"queries={args.queries} from {root or 'data/sample (few queries: set --stb-root for a real load)'}; "
          f"model delay {args.model_delay_ms:.0f} ms x2, server delay {args.server_delay_ms:.0f} ms; "
          f"ideal {ideal_query_s * 1000:.0f} ms per query; {os.cpu_count()} cores (shared: figures are noisy)")
    print(f"{'executor':>9} {'concurrency':>11} {'queries/s':>10} {'ideal q/s':>10} {'efficiency':>10} "
          f"{'overhead ms/step':>17} {'CPU ms/query':>14}")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            def config(name: str, concurrency: int, **fields) -> RunConfig:
                settings = dict(name=name, out_root=tmp, stb_root=root, backend="scripted", dialect="openai-tools",
                                backend_options={"delay_s": args.model_delay_ms / 1000}, concurrency=concurrency,
                                server=url, groups=groups)
                return RunConfig(**{**settings, **fields})

            todo, _ = Runner(config("probe", 1), progress=False).pending()
            todo = todo[: args.queries]
            n = len(todo)
            if "threads" in args.executors:
                for concurrency in args.concurrency:
                    cpu_started = time.process_time()  # this process only: the tool server runs in its own
                    elapsed = timed_run(config(f"threads-c{concurrency}", concurrency), todo)
                    cpu_s = time.process_time() - cpu_started
                    print(row("threads", concurrency, n, elapsed, ideal_query_s, cpu_s), flush=True)
            if "ray" in args.executors:
                ray_rows(args, config, todo, ideal_query_s)
            if not args.no_endpoints:
                endpoint_rows(args, config, todo)
    finally:
        server.terminate()
        server.wait()


def ray_rows(args, config, todo: list, ideal_query_s: float) -> None:
    try:
        import ray
    except ImportError:
        print("      ray   (not installed: pip install -e '.[ray]')")
        return
    from runners.execution.executors import RayExecutor

    started = time.perf_counter()
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    notes = [f"local Ray cluster started in {time.perf_counter() - started:.1f} s"]
    try:
        for concurrency in args.concurrency:
            executor = RayExecutor(concurrency=concurrency)
            started = time.perf_counter()
            timed_run(config(f"ray-warm-c{concurrency}", concurrency, executor="ray"), todo[:concurrency],
                      executor=executor)
            notes.append(f"c{concurrency}: workers started and warm in {time.perf_counter() - started:.1f} s")
            elapsed = timed_run(config(f"ray-c{concurrency}", concurrency, executor="ray"), todo, executor=executor)
            print(row("ray", concurrency, len(todo), elapsed, ideal_query_s), flush=True)
            executor.close()
    finally:
        ray.shutdown()
    print("  ray start-up (not in the rows): " + "; ".join(notes))


def endpoint_rows(args, config, todo: list) -> None:
    """The same run against one model endpoint of fixed capacity, then two."""
    concurrency = max(args.concurrency)
    servers = [serve_in_subprocess("model", str(args.capacity), str(args.model_delay_ms)) for _ in range(2)]
    urls = [f"http://127.0.0.1:{port}/v1" for _, port in servers]
    ceiling = args.capacity / (2 * args.model_delay_ms / 1000)  # queries/s one endpoint allows (2 calls a query)
    print(f"model endpoints of capacity {args.capacity} x {args.model_delay_ms:.0f} ms (at most {ceiling:.0f} "
          f"queries/s each), openai-chat over HTTP, threads, concurrency {concurrency}:")
    try:
        rates = {}
        for count in (1, 2):
            cfg = config(f"endpoints-{count}", concurrency, backend="openai-chat", backend_options={},
                         base_url=urls[:count], model="bench")
            rates[count] = len(todo) / timed_run(cfg, todo)
            print(f"  {count} endpoint{'s' if count > 1 else ' '} {rates[count]:>10.1f} queries/s "
                  f"(ceiling {ceiling * count:.0f})", flush=True)
        print(f"  two endpoints / one: {rates[2] / rates[1]:.2f}x (goal: at least 1.8x)")
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
