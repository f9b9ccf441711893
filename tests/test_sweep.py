"""Issue 34: `tba sweep SPEC.yaml`: the cells of one spec run together, each an ordinary run folder judged by
every judge, loud and resumable per cell, checked before anything runs.

The issue's own spec runs as written (the scripted agent, one judge endpoint: a loopback stand-in)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from runners.cli import main
from tests.openai_standin import OpenAIStandin
from tests.ray_support import needs_ray
from tests.test_judge_failures import solved

CELLS = ["CoT@1__react-find", "CoT@1__react-robust", "DFS_woFilter_w2__react-find", "DFS_woFilter_w2__react-robust"]


@pytest.fixture(scope="module")
def judge():
    with OpenAIStandin(models=("judge-x",), respond=solved) as standin:
        yield standin


def issue_spec(judge, **extra) -> str:
    """The spec of the issue, word for word but the port (and what a test adds)."""
    text = f"""name: demo
base: {{backend: scripted, groups: [G1_instruction], limit: 3}}
axes:
  method: ["CoT@1", "DFS_woFilter_w2"]
  parser: [react-find, react-robust]
judges:
  - {{backend: openai, url: "{judge.url}", model: judge-x, api_key: x, evaluate_times: 1}}
baseline: {{method: "CoT@1", parser: react-find}}
"""
    for key, value in extra.items():
        text += f"{key}: {value}\n"
    return text


def write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def sweep(spec: Path, out: Path, *flags: str) -> int:
    return main(["sweep", str(spec), "--out", str(out), "--quiet", *flags])


def files_of(folder: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(folder)): (p.stat().st_mtime_ns, p.read_bytes())
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_issues_spec_runs_judges_every_cell_and_a_rerun_rewrites_nothing(tmp_path, judge, capsys):
    spec = write(tmp_path, issue_spec(judge))
    out = tmp_path / "sweeps"
    asked = len(judge.requests)
    assert sweep(spec, out, "--judge-cache", str(tmp_path / "judge.jsonl")) == 0
    # one evaluation at a time per judge, each reading the verdicts cached before it: the cells of one method hold
    # the same answer (the two parsers read the scripted agent alike), so each method's is judged once, not twice
    assert len(judge.requests) - asked == 2
    printed = capsys.readouterr().out
    folder = out / "demo"
    state = json.loads((folder / "sweep.json").read_text())
    assert [c["name"] for c in state["cells"]] == CELLS and state["baseline"] == "CoT@1__react-find"
    for cell in state["cells"]:
        assert cell["state"] == "done" and cell["reason"] is None
        run = folder / cell["name"]
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["totals"]["finished"] == manifest["totals"]["queries"] == 1  # the sample: 1 query in G1_instruction
        assert list((run / "G1_instruction").glob("*.json"))  # its answer file, upstream's layout
        evaluation = cell["evaluations"]["judge-x"]
        assert (run / "eval" / evaluation / "evaluation.json").is_file()
        assert json.loads((run / "evaluations.json").read_text())  # tba table / report / compare-runs read it
    # the text parsers on the scripted agent: its ToolLLaMA text was read (a valid call, not an unreadable step)
    assert json.loads((folder / "CoT@1__react-find" / "manifest.json").read_text())["config"]["dialect"] == "toolllama"
    # cells that differ only in the parser shared the model's calls
    shared = state["sessions"][-1]["shared_calls"]
    assert sorted(len(g["cells"]) for g in shared) == [2, 2] and all(g["memo_hits"] > 0 for g in shared)
    assert "differ only in the parser" in printed
    with open(folder / "matrix.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["cell"] for row in rows] == CELLS and {row["judge"] for row in rows} == {"judge-x"}
    paired = "ΔSoPR vs CoT@1__react-find"
    assert rows[0][paired] == "baseline" and all(row[paired] == "0.00" and row["shared_queries"] == "1"
                                                  for row in rows[1:])
    assert all(row["sopr"] == "100.00" and row["model_calls"] == "2" for row in rows)
    assert (folder / "matrix.md").is_file() and (folder / "matrix.tex").is_file()
    before = files_of(folder)
    assert sweep(spec, out, "--judge-cache", str(tmp_path / "judge.jsonl")) == 0
    assert "4 done (0 ran now, 4 done before)" in capsys.readouterr().out
    after = files_of(folder)
    changed = sorted(name for name in after if after[name] != before.get(name))
    assert changed == ["sweep.json"]  # only its session log: no answer, evaluation or matrix file rewritten


def test_a_dead_model_endpoint_fails_its_cell_alone_and_the_sweep_exits_3(tmp_path, judge, capsys):
    spec = write(tmp_path, f"""name: two
base: {{groups: [G1_instruction, G1_tool]}}
axes:
  model:
    - {{label: alive, backend: scripted}}
    - {{label: dead, backend: openai-chat, dialect: openai-tools, model: m, base_url: "http://127.0.0.1:9/v1",
       api_key: x, backend_options: {{retries: 0}}}}
judges: [{{backend: openai, url: "{judge.url}", model: judge-x, api_key: x, evaluate_times: 1}}]
""")
    out = tmp_path / "sweeps"
    assert sweep(spec, out) == 3
    printed = capsys.readouterr().out
    assert "FAILED       dead: " in printed and "cannot reach the model endpoint http://127.0.0.1:9/v1" in printed
    assert f"redo: tba sweep {spec} --out {out} --quiet --cells dead" in printed
    assert "FAILED CELLS 1: dead" in printed
    state = {c["name"]: c for c in json.loads((out / "two" / "sweep.json").read_text())["cells"]}
    assert state["dead"]["state"] == "failed" and "cannot reach" in state["dead"]["reason"]
    assert state["dead"]["redo"].endswith("--cells dead")
    assert state["alive"]["state"] == "done"
    alive = out / "two" / "alive"
    assert len(list(alive.glob("G1_*/*.json"))) == 2 and (alive / "eval" / state["alive"]["evaluations"]["judge-x"]).is_dir()
    assert sweep(spec, out) == 3  # still dead: the alive cell is skipped, the dead one tried again
    assert "done before  alive" in capsys.readouterr().out
    from toolbench_adapter.report.parser_runs import sweep_cells

    assert sweep_cells(out / "two") == [alive]  # compare-runs on the sweep's folder: the done cells, the rest said
    assert "1 of 2 cells not done, left out: dead (failed)" in capsys.readouterr().err


def test_a_judge_that_gives_no_verdict_fails_the_cell(tmp_path, capsys):
    with OpenAIStandin(models=("judge-x",), respond=solved,
                       fail_when=lambda endpoint, body: 500 if "chat" in endpoint and body.get("tool_choice")
                       and "scripted answer" in json.dumps(body) else None) as broken:
        spec = write(tmp_path, issue_spec(broken).replace("evaluate_times: 1", "evaluate_times: 1, options: "
                                                          "{retries: 1, wait_min: 0, wait_max: 0}"))
        assert sweep(spec, tmp_path / "sweeps", "--cells", "CoT@1__react-find") == 3
    printed = capsys.readouterr().out
    assert "FAILED       CoT@1__react-find: judge judge-x: 1 of 1 judgements gave no verdict" in printed


@pytest.mark.parametrize("change, field, needle", [
    (("parser: [react-find, react-robust]", "parser: [react-find, react-robus]"), "axes.parser[1]",
     "unknown parser"),
    (('method: ["CoT@1", "DFS_woFilter_w2"]', 'method: ["CoT@1", "CoT@0"]'), "axes.method[1]", "CoT@N needs N >= 1"),
    (("limit: 3", "limit: 0"), "base.limit", "at least 1"),
    (("limit: 3", "limmit: 3"), "base.limmit", "limit"),
    (('baseline: {method: "CoT@1", parser: react-find}', 'baseline: {method: "CoT@2", parser: react-find}'),
     "baseline.method", "one of CoT@1, DFS_woFilter_w2"),
    (("evaluate_times: 1", "evaluate_times: 0"), "judges[0]", "evaluate-times"),
    (("evaluate_times: 1", "evaluate_tims: 1"), "judges[0].evaluate_tims", "evaluate_times"),
])
def test_a_bad_spec_is_refused_before_anything_runs_naming_the_file_and_key(tmp_path, judge, capsys, change, field,
                                                                            needle):
    spec = write(tmp_path, issue_spec(judge).replace(*change))
    assert sweep(spec, tmp_path / "sweeps") == 2
    err = capsys.readouterr().err
    assert str(spec) in err and field in err and needle in err, err
    assert not (tmp_path / "sweeps").exists()  # nothing written


def test_a_changed_spec_is_refused_and_new_axis_values_only_add_cells(tmp_path, judge, capsys):
    out = tmp_path / "sweeps"
    spec = write(tmp_path, issue_spec(judge).replace('["CoT@1", "DFS_woFilter_w2"]', '["CoT@1"]'))
    assert sweep(spec, out) == 0
    changed = write(tmp_path, issue_spec(judge).replace("limit: 3", "limit: 2"), "changed.yaml")
    assert sweep(changed, out) == 2
    err = capsys.readouterr().err
    assert "a sweep made by another spec: it differs in base" in err and "--name NEW" in err
    extended = write(tmp_path, issue_spec(judge), "extended.yaml")  # DFS added to the method axis
    capsys.readouterr()
    assert sweep(extended, out) == 0
    assert "4 done (2 ran now, 2 done before)" in capsys.readouterr().out


def test_dry_run_prints_the_cells_what_is_done_and_a_bound_on_model_calls(tmp_path, judge, capsys):
    spec = write(tmp_path, issue_spec(judge))
    out = tmp_path / "sweeps"
    assert sweep(spec, out, "--dry-run") == 0
    printed = capsys.readouterr().out
    assert not out.exists()
    for cell in CELLS:
        assert cell in printed
    assert "scripted (in this process): 424" in printed  # 2 x 12 (CoT@1: 12 steps) + 2 x 200 (DFSDT's cap)
    assert sweep(spec, out, "--cells", "CoT@1__react-find") == 0
    capsys.readouterr()
    assert sweep(spec, out, "--dry-run") == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:2] == ["CoT@1__react-find", "done"] for line in lines)
    assert any(line.split()[:2] == ["CoT@1__react-robust", "pending"] for line in lines)


class CountingChatEndpoint:
    """An OpenAI-compatible chat endpoint on loopback that serves requests in threads (many at once), answers as
    the scripted agent, and counts the requests it serves at once (its peak)."""

    def __init__(self, hold_s: float = 0.05):
        import http.server
        import threading

        from runners.models.scripted import scripted_call

        self.peak = self.now = 0
        lock = threading.Lock()
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.reply({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "test"}]})

            def do_POST(self):
                import time

                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    endpoint.now += 1
                    endpoint.peak = max(endpoint.peak, endpoint.now)
                time.sleep(hold_s)
                with lock:
                    endpoint.now -= 1
                turn = sum(m.get("role") == "assistant" for m in body.get("messages", []))
                call = scripted_call(body.get("tools"), turn)
                self.reply({"id": "x", "object": "chat.completion", "model": "m", "choices": [
                    {"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("cap", [3, None])
def test_cells_share_one_cap_on_requests_in_flight_per_endpoint(tmp_path, cap):
    """Two cells of 2 queries in flight each, one endpoint: with endpoints: max_in_flight 3 the endpoint never
    serves more than 3 at once (the cells overlap: it reaches 3); without, it gets the cells' 4."""
    with CountingChatEndpoint() as model:
        limits = f'endpoints: {{"{model.url}": {{max_in_flight: {cap}}}}}\n' if cap else ""
        spec = write(tmp_path, f"""name: capped
base: {{backend: openai-chat, dialect: openai-tools, model: m, base_url: "{model.url}", api_key: x,
        concurrency: 2, max_step: 60}}
axes: {{seed: [1, 2]}}
judges: []
{limits}""")
        assert sweep(spec, tmp_path / "sweeps") == 0
    assert model.peak == (3 if cap else 4)


def test_ctrl_c_lets_the_queries_in_flight_end_and_the_same_command_goes_on(tmp_path, capsys):
    """The first Ctrl-C starts no more cells or queries, lets those in flight end, marks the cells pending and exits
    130; the same command then finishes them (each query once)."""
    import os
    import signal
    import threading

    spec = write(tmp_path, """name: stop
base: {backend: scripted, backend_options: {delay_s: 0.2}}
axes: {seed: [1, 2]}
judges: []
""")
    out = tmp_path / "sweeps"
    timer = threading.Timer(0.8, os.kill, (os.getpid(), signal.SIGINT))  # lands in the main thread, as Ctrl-C does
    timer.start()
    try:
        assert sweep(spec, out) == 130
    finally:
        timer.cancel()
    state = json.loads((out / "stop" / "sweep.json").read_text())
    assert [c["state"] for c in state["cells"]] == ["pending", "pending"] and state["sessions"][-1]["exit"] == 130
    assert "Ctrl-C: starting no more cells or queries" in capsys.readouterr().out
    finished = {c: len(list((out / "stop" / c).glob("G*/*.json"))) for c in ("1", "2")}
    assert all(0 < n < 6 for n in finished.values()), finished  # some ran, the rest were not started
    assert sweep(spec, out) == 0
    assert all(len(list((out / "stop" / c).glob("G*/*.json"))) == 6 for c in ("1", "2"))
    for cell in ("1", "2"):
        ids = [json.loads(line)["query_id"] for line in (out / "stop" / cell / "queries.jsonl").read_text().splitlines()]
        assert len(ids) == len(set(ids)) == 6  # none twice


def test_too_many_cells_are_refused_before_any_is_planned(tmp_path, judge, capsys):
    values = ", ".join(str(i) for i in range(1, 41))
    spec = write(tmp_path, issue_spec(judge).replace("axes:\n", f"axes:\n  seed: [{values}]\n  max_step: [{values}]\n"))
    assert sweep(spec, tmp_path / "sweeps") == 2  # 40 x 40 x 2 x 2 = 6,400 cells
    assert "the axes make 6400 cells, more than 1000" in capsys.readouterr().err


@needs_ray
def test_cells_on_ray_share_one_cluster_that_the_sweep_starts_and_stops(tmp_path, capsys):
    """--executor ray: each cell's queries on Ray workers; the sweep joins (here: starts) one local cluster for all
    of them, so no cell shuts it down under another, and frees each cell's workers when it ends."""
    import ray

    spec = write(tmp_path, """name: onray
base: {backend: scripted, executor: ray, groups: [G1_instruction, G1_tool]}
axes: {seed: [1, 2, 3]}
judges: []
""")
    assert not ray.is_initialized()
    assert sweep(spec, tmp_path / "sweeps") == 0
    assert not ray.is_initialized()  # the cluster the sweep started went with it
    state = json.loads((tmp_path / "sweeps" / "onray" / "sweep.json").read_text())
    assert [c["state"] for c in state["cells"]] == ["done"] * 3
    for cell in ("1", "2", "3"):
        manifest = json.loads((tmp_path / "sweeps" / "onray" / cell / "manifest.json").read_text())
        assert manifest["config"]["executor"] == "ray" and manifest["totals"]["finished"] == 2


@pytest.mark.parametrize("flag", [["--out-root", "x"], ["--shard", "1/2"], ["--model-label", "m"], ["--score-anyway"]])
def test_a_run_or_judge_flag_a_sweep_cannot_honour_is_refused_not_ignored(tmp_path, judge, capsys, flag):
    spec = write(tmp_path, issue_spec(judge))
    assert sweep(spec, tmp_path / "sweeps", *flag) == 2
    assert f"{flag[0]} is not a sweep's" in capsys.readouterr().err and not (tmp_path / "sweeps").exists()


@pytest.mark.parametrize("settings, bound", [
    ({"method": "CoT@1"}, 12), ({"method": "CoT@2", "on_invalid": "reask:2"}, 72),
    ({"method": "CoT@1", "on_invalid": "reask:2", "max_query_count": 5}, 17),  # re-asks stop at the call cap
    ({"method": "DFS_woFilter_w2"}, 200), ({"method": "DFS_woFilter_w2", "max_query_count": 30}, 30),
])
def test_the_dry_runs_bound_on_a_querys_model_calls(settings, bound):
    from runners.config import RunConfig
    from runners.sweep.dry_run import calls_per_query

    assert calls_per_query(RunConfig(**settings)) == bound


def test_option_flags_are_added_to_the_specs_options_as_tba_run_adds_them_to_its_config(tmp_path, judge):
    """--backend-option k=v on the command line adds to base's backend_options (tba run adds it to its --config
    file's); it used to replace them, dropping the spec's own."""
    spec = write(tmp_path, issue_spec(judge).replace("limit: 3}", "limit: 3, backend_options: {delay_s: 0.01}}"))
    assert sweep(spec, tmp_path / "sweeps", "--cells", "CoT@1__react-find", "--backend-option", "model=other") == 0
    manifest = json.loads((tmp_path / "sweeps" / "demo" / "CoT@1__react-find" / "manifest.json").read_text())
    assert manifest["config"]["backend_options"] == {"delay_s": 0.01, "model": "other"}


def test_one_progress_bar_counts_every_cells_queries(tmp_path, capsys):
    """Without --quiet: one bar over all the cells' queries as they end (a done cell's at once), the cells ended in
    its postfix; each cell's own run keeps no bar of its own."""
    spec = write(tmp_path, """name: bar
base: {backend: scripted, groups: [G1_instruction, G1_tool]}
axes: {seed: [1, 2]}
judges: []
""")
    for _ in range(2):  # a run, then a rerun in which both cells were done before
        assert main(["sweep", str(spec), "--out", str(tmp_path / "sweeps")]) == 0
        err = capsys.readouterr().err
        assert "4/4 [" in err and "cells ended 2/2, failed 0" in err, err[-1000:]
