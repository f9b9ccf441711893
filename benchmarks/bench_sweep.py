"""An 8-cell sweep against model endpoints of fixed capacity: how busy it keeps them, against running the same
cells one after another.

Two fake OpenAI-compatible chat endpoints (each in its own process) serve at most --capacity requests at once (the
next one waits inside the server) and take --model-delay-ms per call; each counts its busy slot-seconds. The model
plays a tool-using agent with native tool calls (openai-tools): it calls the query's first function --tool-turns
times, then Finish, so every query costs tool-turns + 1 model calls (the sample has 6 queries: the default 39
tool turns make a sweep of about 12 s, so the command's fixed start-up and wind-down, about 1 s together, weigh
little; a real sweep runs for hours). The cells: 2 models (a on endpoint 1, b on
endpoint 2) x 2 methods (CoT@1, DFS_woFilter_w2) x 2 seeds, on the sample set (data/sample, embedded tool server),
each run at concurrency --concurrency.

- sweep: `tba sweep` on a spec of those cells with `endpoints: {URL: {max_in_flight: capacity}}` where the command
  exists; until then (or with --emulate) its emulation: the 8 runs as concurrent Runner threads in this process,
  sharing the per-endpoint caps of toolbench_adapter/net/inflight.py.
- one after another: the same 8 runs in turn (what `make compare-structured` did), no caps.

Printed per phase: wall time, the capacity bound (model calls x delay / all slots; the per-endpoint bound when the
load is uneven) and "utilisation N%": busy slots over available at the endpoints, over the phase's wall time; then
the seconds before the phase's first model call (start-up) and after its last (wind-down), which it includes.
The goal for the sweep: utilisation >= 85% and wall <= 1.2x the capacity bound. Run with `make bench-sweep`.
"""

from __future__ import annotations

import argparse
import http.server
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from loopback_json import JsonHandler, agent_message, chat_completion, serve  # noqa: E402

from runners.config import RunConfig  # noqa: E402
from runners.execution.runner import Runner  # noqa: E402
from toolbench_adapter.net.inflight import clear_caps, set_cap  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
MODELS = ("a", "b")
METHODS = ("CoT@1", "DFS_woFilter_w2")
SEEDS = (1, 2)


def fixed_capacity_endpoint(model: str, capacity: int, delay_s: float, tool_turns: int) -> http.server.HTTPServer:
    """The endpoint: GET /v1/models lists ``model``; POST /v1/chat/completions holds one of ``capacity`` slots for
    ``delay_s`` (a model replica with a fixed batch size); GET /stats: calls and busy slot-seconds so far."""
    slots = threading.Semaphore(capacity)
    lock = threading.Lock()
    # first: time.monotonic() of the first slot taken since the last GET /stats; last: of the last slot freed
    # present / peak: requests inside the server (waiting for a slot or served) now and at most since the last GET
    stats = {"calls": 0, "busy_s": 0.0, "first": None, "last": None, "present": 0, "peak": 0}

    class Handler(JsonHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            if self.path.endswith("/stats"):
                with lock:
                    answer, stats["first"], stats["peak"] = dict(stats), None, stats["present"]
                return self._send(answer)
            self._send({"object": "list", "data": [{"id": model, "object": "model", "owned_by": "bench"}]})

        def do_POST(self):  # noqa: N802 (http.server API)
            body = self._json_body()
            with lock:
                stats["present"] += 1
                stats["peak"] = max(stats["peak"], stats["present"])
            with slots:
                started = time.monotonic()
                time.sleep(delay_s)
                held = time.monotonic() - started
            with lock:
                stats["calls"] += 1
                stats["present"] -= 1
                stats["busy_s"] += held
                stats["first"] = stats["first"] or started
                stats["last"] = started + held
            self._send(chat_completion(model, agent_message(body, tool_turns)))

    return serve(Handler)


def start_endpoint(model: str, args) -> tuple[subprocess.Popen, str]:
    """An endpoint in its own process, so it does not compete with the harness for the GIL; its /v1 URL."""
    proc = subprocess.Popen([sys.executable, __file__, "--serve", model, str(args.capacity), str(args.model_delay_ms),
                             str(args.tool_turns)], stdout=subprocess.PIPE, text=True)
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}/v1"


def endpoint_stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/stats", timeout=10) as reply:
        return json.loads(reply.read())


def base_settings(args) -> dict:
    """The run settings every cell shares (a sweep spec's ``base``)."""
    # max_step counts tree nodes, two per tool call (the call and its arguments): room for every call and Finish
    return {"backend": "openai-chat", "dialect": "openai-tools", "api_key": "x", "concurrency": args.concurrency,
            "max_step": 2 * args.tool_turns + 4, "stb_root": str(SAMPLE), "tool_root": str(SAMPLE / "toolenv" / "tools")}


def cells(urls: dict[str, str]) -> list[dict]:
    """Each cell's name and its own settings (the axes' values)."""
    return [{"name": f"{model}__{method}__seed{seed}",
             "settings": {"model": model, "base_url": urls[model], "method": method, "seed": seed}}
            for model in MODELS for method in METHODS for seed in SEEDS]


def run_cell(cell: dict, base: dict, out_root: str) -> None:
    cfg = RunConfig(name=cell["name"], out_root=out_root, **{**base, **cell["settings"]})
    totals = Runner(cfg, progress=False).run()["totals"]
    if not totals.get("queries") or totals["finished"] != totals["queries"]:
        raise SystemExit(f"{cell['name']}: {totals['finished']} of {totals.get('queries')} queries finished")


def sweep_command_exists() -> bool:
    return importlib.util.find_spec("runners.sweep") is not None


def sweep_spec(urls: dict[str, str], base: dict, capacity: int) -> dict:
    """The cells as a `tba sweep` spec (TEAM.md's shape)."""
    return {"name": "bench-sweep", "base": base,
            "axes": {"model": [{"label": model, "model": model, "base_url": urls[model]} for model in MODELS],
                     "method": list(METHODS), "seed": list(SEEDS)},
            "judges": [],
            "endpoints": {url: {"max_in_flight": capacity} for url in urls.values()}}


def run_sweep(spec_path: Path, out: Path) -> None:
    """`tba sweep SPEC --out OUT`, as a researcher runs it."""
    done = subprocess.run([sys.executable, "-m", "runners.cli", "sweep", str(spec_path), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tba sweep exited {done.returncode}:\n{done.stdout}{done.stderr}")


def emulate_sweep(all_cells: list[dict], base: dict, out_root: str, capacity: int) -> float:
    """The sweep's schedule without `tba sweep`: every cell a Runner in its own thread, the endpoints' caps shared.
    Returns the caps' own utilisation (slots held by this process over available)."""
    caps = [set_cap(url, capacity) for url in {cell["settings"]["base_url"] for cell in all_cells}]
    failures: list[BaseException] = []

    def cell_thread(cell: dict) -> None:
        try:
            run_cell(cell, base, out_root)
        except BaseException as exc:  # noqa: BLE001 (reported below, after every cell ended)
            failures.append(exc)

    threads = [threading.Thread(target=cell_thread, args=(cell,)) for cell in all_cells]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        held = sum(cap.utilisation() for cap in caps) / len(caps)
    finally:
        clear_caps()
    if failures:
        raise SystemExit(f"{len(failures)} cell(s) failed: {failures[0]}")
    return held


def measured(urls: list[str], phase) -> dict:
    """Wall seconds of ``phase()``; per endpoint, the calls and busy slot-seconds it made; the seconds before its
    first model call (start-up) and after its last (wind-down). time.monotonic() is one clock for every process
    on Linux (CLOCK_MONOTONIC), so the endpoints' times compare with this one's."""
    before = [endpoint_stats(url) for url in urls]
    started = time.monotonic()
    phase()
    ended = time.monotonic()
    after = [endpoint_stats(url) for url in urls]
    first, last = min(a["first"] for a in after), max(a["last"] for a in after)
    return {"wall": ended - started, "start_up": first - started, "wind_down": ended - last,
            "endpoints": [{"calls": a["calls"] - b["calls"], "busy_s": a["busy_s"] - b["busy_s"], "peak": a["peak"]}
                          for a, b in zip(after, before, strict=True)]}


def report(label: str, phase: dict, args) -> tuple[float, float]:
    """One phase's line; returns its utilisation and wall / the capacity bound."""
    wall, per_endpoint = phase["wall"], phase["endpoints"]
    delay_s, slots = args.model_delay_ms / 1000, args.capacity * len(per_endpoint)
    calls = sum(e["calls"] for e in per_endpoint)
    bound = calls * delay_s / slots
    busiest = max(e["calls"] for e in per_endpoint) * delay_s / args.capacity
    uneven = f" (the busiest endpoint's: {busiest:.2f} s)" if busiest > bound * 1.001 else ""
    bound = max(bound, busiest)  # an uneven load cannot end before its busiest endpoint has served its calls
    utilisation = sum(e["busy_s"] for e in per_endpoint) / (slots * wall)
    steady = sum(e["busy_s"] for e in per_endpoint) / (slots * (wall - phase["start_up"] - phase["wind_down"]))
    each = ", ".join(f"{e['busy_s'] / (args.capacity * wall):.0%}" for e in per_endpoint)
    print(f"{label:<22} wall {wall:6.2f} s  capacity bound {bound:5.2f} s{uneven} ({wall / bound:.2f}x)  model calls {calls:>4}"
          f"  utilisation {utilisation:.0%} (first to last model call: {steady:.0%}; per endpoint {each}; "
          f"start-up {phase['start_up']:.2f} s, "
          f"wind-down {phase['wind_down']:.2f} s; at most {max(e['peak'] for e in per_endpoint)} requests at an "
          f"endpoint at once)", flush=True)
    return utilisation, wall / bound


def main() -> None:
    if len(sys.argv) >= 2 and sys.argv[1] == "--serve":
        model, capacity, delay_ms, tool_turns = sys.argv[2:6]
        server = fixed_capacity_endpoint(model, int(capacity), float(delay_ms) / 1000, int(tool_turns))
        print(server.server_address[1], flush=True)
        threading.Event().wait()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--capacity", type=int, default=4, help="requests an endpoint serves at once (default 4)")
    parser.add_argument("--model-delay-ms", type=float, default=50.0, help="model time per call (default 50 ms)")
    parser.add_argument("--tool-turns", type=int, default=39,
                        help="tool calls before Finish: model calls per query = this + 1 (default 39)")
    parser.add_argument("--concurrency", type=int, default=4, help="queries in flight per cell (default 4)")
    parser.add_argument("--emulate", action="store_true",
                        help="run the sweep phase as concurrent in-process runs even where `tba sweep` exists")
    parser.add_argument("--no-sequential", action="store_true", help="skip the one-after-another phase")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run the sweep phase this many times, each in a fresh folder; the goal is judged on the "
                        "median, with the min beside it (default 1)")
    args = parser.parse_args()
    servers = [start_endpoint(model, args) for model in MODELS]
    urls = {model: url for model, (_, url) in zip(MODELS, servers, strict=True)}
    all_cells = cells(urls)
    real = sweep_command_exists() and not args.emulate
    print(f"{len(all_cells)} cells: models {'/'.join(MODELS)} (one endpoint each) x methods {', '.join(METHODS)} x seeds "
          f"{', '.join(map(str, SEEDS))}; data/sample, {args.tool_turns + 1} model calls a query, concurrency "
          f"{args.concurrency} per cell; endpoints of {args.capacity} in flight x {args.model_delay_ms:.0f} ms a call; "
          f"{os.cpu_count()} cores (shared: figures are noisy), load average {os.getloadavg()[0]:.1f} now")
    base = base_settings(args)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run_cell(dict(all_cells[0], name="warm-up"), {**base, "concurrency": 1}, tmp)  # imports, first server start
            figures = []
            for repeat in range(max(1, args.repeats)):
                if real:
                    spec = Path(tmp, "bench-sweep.yaml")
                    spec.write_text(json.dumps(sweep_spec(urls, base, args.capacity), indent=1))  # JSON is YAML
                    sweep = measured(list(urls.values()),
                                     lambda r=repeat, s=spec: run_sweep(s, Path(tmp, f"sweeps{r}")))
                    label, held = "tba sweep", None
                else:
                    held = []
                    sweep = measured(list(urls.values()), lambda r=repeat, h=held: h.append(
                        emulate_sweep(all_cells, base, str(Path(tmp, f"sweep{r}")), args.capacity)))
                    label, held = "sweep (emulated)", held[0]
                figures.append(report(label, sweep, args))
                if held is not None:
                    print(f"{'':<22} emulated: the {len(all_cells)} runs as threads of this process sharing caps of "
                          f"{args.capacity} per endpoint (net/inflight.py), whose own accounting says {held:.0%} of "
                          f"their slots held")
            utilisation = statistics.median(u for u, _ in figures)
            ratio = statistics.median(r for _, r in figures)
            if len(figures) > 1:
                print(f"{label} over {len(figures)} runs: utilisation min {min(u for u, _ in figures):.0%}, median "
                      f"{utilisation:.0%}; wall / capacity bound min {min(r for _, r in figures):.2f}x, median "
                      f"{ratio:.2f}x")
            if not args.no_sequential:
                sequential = str(Path(tmp, "sequential"))
                alone = measured(list(urls.values()), lambda: [run_cell(cell, base, sequential) for cell in all_cells])
                report("one after another", alone, args)
                print(f"sweep / one after another: {alone['wall'] / sweep['wall']:.1f}x faster")
        met = utilisation >= 0.85 and ratio <= 1.2
        print(f"goal (sweep{', the median run' if args.repeats > 1 else ''}): utilisation >= 85% and wall <= 1.2x the "
              f"capacity bound: {'met' if met else 'NOT met'} (load average {os.getloadavg()[0]:.1f} now)")
    finally:
        for proc, _ in servers:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
