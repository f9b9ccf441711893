"""Harness overhead: a model and a tool server that each answer after a fixed delay.

Every query makes 2 model calls and 1 tool call (call the first function, then Finish), so its ideal
time is 2*MODEL_DELAY + SERVER_DELAY and the ideal throughput at concurrency c is c / that (capped by the
number of queries). The gap between measured and ideal is the harness's own cost: rendering, parsing,
tree bookkeeping, JSON writing, HTTP to the tool server. Prints one table; run with `make bench-runner`.
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

from runners.config import RunConfig  # noqa: E402
from runners.models.scripted import ScriptedBackend  # noqa: E402
from runners.run import Runner  # noqa: E402


def delayed_server(delay_s: float) -> http.server.ThreadingHTTPServer:
    body = json.dumps({"error": "", "response": "ok"}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):  # noqa: N802 (http.server API)
            self.rfile.read(int(self.headers.get("content-length", 0)))
            time.sleep(delay_s)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256  # the default backlog of 5 drops connections at concurrency 32

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_in_subprocess(delay_ms: float) -> tuple[subprocess.Popen, str]:
    """The tool server in its own process, so it does not compete with the harness for the GIL."""
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(delay_ms)], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/virtual"


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        server = delayed_server(float(sys.argv[2]) / 1000)
        print(server.server_address[1], flush=True)
        threading.Event().wait()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stb-root", default=os.environ.get("TBA_STB_ROOT", "../shared/stabletoolbench"))
    parser.add_argument("--queries", type=int, default=64)
    parser.add_argument("--model-delay-ms", type=float, default=50.0)
    parser.add_argument("--server-delay-ms", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()
    root = args.stb_root if Path(args.stb_root, "solvable_queries").is_dir() else None
    server, url = serve_in_subprocess(args.server_delay_ms)
    ideal_query_s = (2 * args.model_delay_ms + args.server_delay_ms) / 1000
    print(f"queries={args.queries} from {root or 'data/sample (few queries: set --stb-root for a real load)'}; "
          f"model delay {args.model_delay_ms:.0f} ms x2, server delay {args.server_delay_ms:.0f} ms; "
          f"ideal {ideal_query_s * 1000:.0f} ms per query")
    print(f"{'concurrency':>11} {'queries/s':>10} {'ideal q/s':>10} {'efficiency':>10} {'overhead ms/step':>17}")
    with tempfile.TemporaryDirectory() as tmp:
        for concurrency in args.concurrency:
            cfg = RunConfig(name=f"c{concurrency}", out_root=tmp, stb_root=root, backend="scripted",
                            dialect="openai-tools", concurrency=concurrency, limit=None,
                            groups=["G1_instruction", "G1_category", "G1_tool"] if root else [])
            runner = Runner(cfg, backend=ScriptedBackend(delay_s=args.model_delay_ms / 1000), server_url=url,
                            progress=False)
            todo, _ = runner.pending()
            todo = todo[: args.queries]
            runner.pending = lambda todo=todo: (todo, 0)
            started = time.perf_counter()
            runner.run()
            elapsed = time.perf_counter() - started
            n = len(todo)
            rate = n / elapsed
            ideal = min(concurrency, n) / ideal_query_s
            waves = -(-n // concurrency)  # rounds of `concurrency` queries
            overhead_ms = (elapsed - waves * ideal_query_s) / (waves * 3) * 1000  # 3 steps per query
            print(f"{concurrency:>11} {rate:>10.1f} {ideal:>10.1f} {rate / ideal:>9.0%} {overhead_ms:>17.2f}")
    server.terminate()
    server.wait()


if __name__ == "__main__":
    main()
