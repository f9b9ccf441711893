"""CPU per JSON POST: requests against the lean lane (toolbench_adapter/net/lean_http.py), side by side in one run.

Every HTTP call of a run (tool server, model endpoints, judge) is a small JSON POST through
``HttpTransport.post_json``. This posts a tool-call-sized body to a loopback stub (bench_runner.py's tool server,
in its own process, keep-alive, no delay) and reads the small JSON reply, single-threaded, and prints this
process's CPU time and the wall time per call:

- requests: ``EnvCachedSession.post`` + ``.json()`` (the per-thread session the transport keeps);
- urllib3, http.client: the same exchange one layer down each (a kept-alive connection), for reference;
- post_json lean / post_json requests: the whole transport (endpoint pool, retry bookkeeping, HttpResult)
  over the lean lane, and with ``lean=False`` over requests;
- deadline alone: what bounding the whole request costs each of them (net/deadline.py: a Deadline opened,
  its socket watched, closed), no request sent.

Each row runs twice, interleaved, after a warm-up; the lower figure is kept. Run with
``.venv/bin/python benchmarks/bench_http.py [--calls N]``. Figures are noisy on a shared machine: compare rows
of one run, not runs.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import time
from pathlib import Path

import urllib3

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_runner import serve_in_subprocess  # noqa: E402

from toolbench_adapter.net.deadline import Deadline  # noqa: E402
from toolbench_adapter.net.http_session import EnvCachedSession  # noqa: E402
from toolbench_adapter.net.transport import HttpTransport  # noqa: E402

BODY = {"category": "Weather", "tool_name": "sky", "api_name": "now", "tool_input": '{"city": "Paris"}',
        "strip": "truncate", "toolbench_key": "EMPTY"}
HEADERS = {"Content-Type": "application/json", "Accept-Encoding": "gzip, deflate", "Accept": "*/*",
           "User-Agent": "bench", "Connection": "keep-alive"}


def clients(port: int) -> dict:
    url = f"http://127.0.0.1:{port}/virtual"
    session = EnvCachedSession()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    pool = urllib3.HTTPConnectionPool("127.0.0.1", port, maxsize=1)
    lean = HttpTransport.to(url, timeout=60)
    plain = HttpTransport.to(url, timeout=60, lean=False)

    def via_requests():
        session.post(url, json=BODY, timeout=60).json()

    def via_urllib3():
        reply = pool.urlopen("POST", "/virtual", body=json.dumps(BODY).encode(), headers=HEADERS, retries=False)
        json.loads(reply.data)

    def via_http_client():
        conn.request("POST", "/virtual", json.dumps(BODY).encode(), HEADERS)
        json.loads(conn.getresponse().read())

    def via(transport: HttpTransport):
        def call():
            assert transport.post_json("", BODY).ok
        return call

    def deadline_alone():
        with Deadline(60.0) as deadline:
            deadline.watch(conn.sock)

    return {"requests": via_requests, "urllib3": via_urllib3, "http.client": via_http_client,
            "post_json lean": via(lean), "post_json requests": via(plain), "deadline alone": deadline_alone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3000, help="timed calls per row and round")
    args = parser.parse_args()
    server, port = serve_in_subprocess("0")
    try:
        rows = clients(port)
        best: dict[str, tuple[float, float]] = {}
        for _ in range(2):
            for name, call in rows.items():
                for _ in range(200):
                    call()
                cpu, wall = time.process_time(), time.perf_counter()
                for _ in range(args.calls):
                    call()
                figures = ((time.process_time() - cpu) / args.calls * 1e6,
                           (time.perf_counter() - wall) / args.calls * 1e6)
                best[name] = min(best.get(name, figures), figures)
        print(f"{args.calls} POSTs per row, single-threaded, loopback, keep-alive")
        print(f"{'client':>20} {'CPU us/call':>12} {'wall us/call':>13}")
        for name, (cpu_us, wall_us) in best.items():
            print(f"{name:>20} {cpu_us:>12.0f} {wall_us:>13.0f}")
    finally:
        server.terminate()


if __name__ == "__main__":
    main()
