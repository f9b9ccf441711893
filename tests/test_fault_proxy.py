"""A run through a fault-injecting proxy (issue 12): about a fifth of the requests between the runner and
the embedded tool server time out, get a 503, a cut body, a non-JSON body or a reset. The run must
complete, lose nothing (each query finished with an answer file, or listed as an infrastructure failure
and redone by a rerun), and steps.jsonl must show every fault the proxy injected, with its kind."""

from __future__ import annotations

import json
import random
import socket
import struct
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.base import Completion, ModelRequest
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
from toolbench_adapter.server.client import PREFLIGHT_TOOL_INPUT
from toolbench_adapter.server.runner import EmbeddedServer

CALLS_PER_QUERY = 6  # tool calls the scripted model makes before it answers
FAULTS = ("timeout", "http_503", "cut_body", "not_json", "reset")
CLIENT_TIMEOUT_S = 0.3
# what the client must call each injected fault: per attempt (ServerReply.faults), and as the reply kind
# when it was the last attempt
FAULT_KIND = {"timeout": "timeout", "http_503": "http_5xx", "cut_body": "truncated_body", "not_json": "not_json",
              "reset": "connection_error"}
REPLY_KIND = {"ok": "ok", "timeout": "timeout", "http_503": "http_error", "cut_body": "truncated_body",
              "not_json": "not_json", "reset": "connection_error"}


class FaultProxy:
    """A loopback HTTP proxy in front of the /virtual server. Whether a request is faulted, and how, depends
    only on (seed, probe, attempt), so a run is reproducible whatever the thread timing. It logs what it did."""

    def __init__(self, upstream: str, seed: int, rate: float = 0.2):
        self.upstream, self.seed, self.rate = upstream, seed, rate
        self.log: dict[str, list[str]] = defaultdict(list)  # probe -> action per attempt ("ok" or a fault)
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                proxy.handle(self, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def action(self, probe: str, attempt: int) -> str:
        rng = random.Random(f"{self.seed}:{probe}:{attempt}")
        return rng.choice(FAULTS) if rng.random() < self.rate else "ok"

    def handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        if json.loads(body)["tool_input"] == PREFLIGHT_TOOL_INPUT:  # the run's preflight: passed on, not faulted
            upstream = requests.post(self.upstream, data=body, headers={"Content-Type": "application/json"}, timeout=10)
            self._reply(handler, upstream.status_code, upstream.content)
            return
        probe = json.loads(json.loads(body)["tool_input"])["probe"]
        with self._lock:
            action = self.action(probe, len(self.log[probe]))
            self.log[probe].append(action)
        if action == "timeout":
            time.sleep(CLIENT_TIMEOUT_S * 2)  # the client has given up by then
            handler.close_connection = True
        elif action == "reset":  # RST instead of a reply
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.close_connection = True
        elif action == "http_503":
            self._reply(handler, 503, b'{"detail": "injected"}')
        elif action == "not_json":
            self._reply(handler, 200, b"<html>injected, not JSON</html>")
        else:
            upstream = requests.post(self.upstream, data=body, headers={"Content-Type": "application/json"},
                                     timeout=10)
            if action == "cut_body":  # announce the whole body, send a part, hang up
                self._reply(handler, 200, upstream.content[: len(upstream.content) // 2],
                            length=len(upstream.content))
            else:
                self._reply(handler, upstream.status_code, upstream.content,
                            headers={k: v for k, v in upstream.headers.items() if k.lower().startswith("x-tba")})

    @staticmethod
    def _reply(handler, status: int, content: bytes, length: int | None = None, headers: dict | None = None):
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(length if length is not None else len(content)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(content)
        handler.wfile.flush()
        handler.close_connection = True


def probing_script(request: ModelRequest) -> Completion:
    """CALLS_PER_QUERY calls of the first function, each with a probe naming (query, turn); then Finish."""
    turn = len(request.key["path"])
    query_id = request.key["query_id"]
    if turn < CALLS_PER_QUERY:
        first = request.tools[0]["function"]
        call = {"name": first["name"], "arguments": json.dumps({"probe": f"{query_id}-{turn}"})}
    else:
        call = {"name": "Finish", "arguments": json.dumps({"return_type": "give_answer", "final_answer": "done"})}
    return Completion(tool_calls=[{"id": f"call_{turn}", "type": "function", "function": call}])


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def run_through(proxy: FaultProxy, cfg: RunConfig) -> tuple[dict, ScriptedBackend]:
    backend = ScriptedBackend(probing_script, natural_dialect="openai-tools")
    client = {"timeout_s": CLIENT_TIMEOUT_S, "attempts": 3, "backoff_base_s": 0.0, "backoff_max_s": 0.0}
    manifest = Runner(cfg, backend=backend, server_url=proxy.url, progress=False, client_options=client).run()
    return manifest, backend


def test_a_run_through_faults_completes_loses_nothing_and_logs_every_fault(tmp_path):
    server = build_virtual_server(ServerConfig(simulator="schema", save=False))
    cfg = RunConfig(name="faults", out_root=str(tmp_path), backend="scripted", concurrency=3)
    run_dir = tmp_path / "faults"
    started = time.perf_counter()
    with EmbeddedServer(create_app(server)) as embedded, FaultProxy(embedded.url + "/virtual", seed=73) as proxy:
        manifest, _ = run_through(proxy, cfg)
        injected = [a for actions in proxy.log.values() for a in actions if a != "ok"]
        assert set(injected) == set(FAULTS), "the seed must exercise every fault kind"
        assert any(len(a) > 1 and a[-1] == "ok" for a in proxy.log.values()), "and a fault a retry got over"

        # every tool call's step line tells what the proxy did on each of its attempts
        steps = [s for s in jsonl(run_dir / "steps.jsonl") if s["reply_kind"] is not None]
        by_probe = {f"{s['query_id']}-{s['turn'] - 1}": s for s in steps}
        assert set(by_probe) == set(proxy.log), "a request reached the proxy that no step line accounts for"
        for probe, actions in proxy.log.items():
            step = by_probe[probe]
            assert step["attempts"] == len(actions), probe
            assert step["faults"] == [FAULT_KIND[a] for a in actions if a != "ok"], probe
            assert step["reply_kind"] == REPLY_KIND[actions[-1]], probe
            assert step["infra_failure"] == (None if actions[-1] == "ok" else "tool_server"), probe
            if actions[-1] == "http_503":
                assert step["http_status"] == 503

        # nothing lost: each query finished with an answer file, or failed with no answer and a record
        totals = manifest["totals"]
        failed = {(e["group"], e["query_id"]) for e in jsonl(run_dir / "errors.jsonl")}
        finished = {(p.parent.name, int(p.name.split("_")[0])) for p in run_dir.glob("G*/*_CoT@1.json")}
        assert totals["queries"] == 6 and not failed & finished and len(failed | finished) == 6
        assert (totals["finished"], totals["infra_failures"]) == (len(finished), len(failed))
        assert 1 <= len(failed) < len(finished), "with retries most queries finish; this seed fails some"
        assert {(p.parent.name, int(p.name.split("_")[0])) for p in (run_dir / "failed").glob("*/*.json")} == failed
        assert set(totals["infra_failures_by_kind"]) == {"tool_server"}

        # a rerun (faults gone) redoes exactly the failed queries
        proxy.rate = 0.0
        answers_before = {p: p.read_bytes() for p in run_dir.glob("G*/*.json")}
        second, backend = run_through(proxy, cfg)
        assert {(r.key["group"], r.key["query_id"]) for r in backend.requests} == failed
        assert all(p.read_bytes() == content for p, content in answers_before.items())
        assert (second["totals"]["finished"], second["totals"]["infra_failures"]) == (6, 0)
    assert time.perf_counter() - started < 20
