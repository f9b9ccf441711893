"""--executor ray (issue 15) on a local Ray cluster: the same answer files as threads, and a worker process
killed mid-run is restarted with its queries retried, nothing lost or run twice. One cluster per module."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from runners.cli import main
from runners.config import RunConfig
from runners.execution.executors import EXECUTORS, RayExecutor, ThreadsExecutor, make_executor
from runners.execution.runner import Runner
from runners.models.scripted import ScriptedBackend
from tests.ray_support import needs_ray


def answers(run_dir: Path) -> dict:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("*/*.json"))}


def stats_lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "queries.jsonl").read_text().splitlines()]


def session_processes(sid: int) -> list[int]:
    """Live processes of a session (a killed driver's Ray cluster)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] != "Z":  # field 6 of stat: the session id
                found.append(int(entry.name))
    return found


class DiesOnce(ScriptedBackend):
    """The scripted agent, but the first model call in any worker ends that worker's process (as an OOM kill
    or a lost node would), once per marker file."""

    def __init__(self, marker: str, **options):
        super().__init__(**options)
        self.marker = Path(marker)

    def complete(self, request):
        try:
            with open(self.marker, "x") as handle:  # exactly one process wins, once
                handle.write(str(os.getpid()))
        except FileExistsError:
            return super().complete(request)
        os._exit(1)


@needs_ray
def test_the_sample_set_gives_the_same_answer_files_under_threads_and_ray(tmp_path, ray_cluster, capsys):
    common = ["run", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", "--concurrency", "4"]
    assert main([*common, "--name", "threads"]) == 0
    assert main([*common, "--name", "ray", "--executor", "ray"]) == 0
    threads, on_ray = answers(tmp_path / "threads"), answers(tmp_path / "ray")
    assert len(threads) == 6 and threads == on_ray
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["config"]["executor"] == "ray"
    assert (manifest["totals"]["finished"], manifest["totals"]["model_calls"]) == (6, 12)
    [server] = manifest["sessions"][-1]["endpoints"]["tool_server"]
    assert server["served"] == 6  # the workers' tool calls, added up in the driver
    ids = [s["query_id"] for s in stats_lines(tmp_path / "ray")]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6
    steps = (tmp_path / "ray" / "steps.jsonl").read_text().splitlines()
    assert len(steps) == 12
    # resume: a second run of the same command finds everything done
    assert main([*common, "--name", "ray", "--executor", "ray"]) == 0
    assert answers(tmp_path / "ray") == on_ray
    assert json.loads((tmp_path / "ray" / "manifest.json").read_text())["sessions"][-1]["skipped_as_done"] == 6


@needs_ray
def test_a_worker_killed_mid_run_is_retried_and_nothing_is_lost_or_duplicated(tmp_path, ray_cluster):
    reference = Runner(RunConfig(name="threads", out_root=str(tmp_path), backend="scripted", concurrency=2),
                       progress=False)
    reference.run()
    marker = tmp_path / "died"
    executor = RayExecutor(concurrency=4, backend_factory=functools.partial(DiesOnce, str(marker)))
    cfg = RunConfig(name="killed", out_root=str(tmp_path), backend="scripted", concurrency=4, executor="ray")
    manifest = Runner(cfg, progress=False, executor=executor).run()
    assert marker.exists(), "a worker process must have died"
    assert int(marker.read_text()) != os.getpid()  # a worker, not the driver
    assert manifest["totals"]["finished"] == 6 and manifest["totals"]["infra_failures"] == 0
    assert answers(tmp_path / "killed") == answers(tmp_path / "threads")
    ids = [s["query_id"] for s in stats_lines(tmp_path / "killed")]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6  # each query recorded exactly once
    assert not (tmp_path / "killed" / "failed").exists()


def test_executors_are_registered_by_name():
    assert {"threads", "ray"} <= set(EXECUTORS.names())
    assert isinstance(make_executor(RunConfig()), ThreadsExecutor)
    assert isinstance(make_executor(RunConfig(executor="ray", ray_address="auto", concurrency=8)), RayExecutor)


def test_an_unknown_executor_is_bad_input_with_did_you_mean(tmp_path, capsys):
    args = ["run", "--name", "r", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", "--executor", "thread"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "field 'executor'" in err and "Did you mean threads?" in err and "fix:" in err
    assert not (tmp_path / "r").exists()


class SerialExecutor:
    """A plug-in executor: one query at a time in this thread."""

    name = "serial"

    def __init__(self, **_):
        self.running: list = []

    def map(self, runner, queries, client):
        for query in queries:
            self.running = [query]
            try:
                result = runner.run_query(query, client)
            except Exception as exc:  # as the threads executor: the exception is the query's result
                result = exc
            self.running = []
            yield query, result

    def endpoint_stats(self, runner, client):
        return {"model": [], "tool_server": client.pool_stats()}

    def in_flight(self):
        return list(self.running)


def test_an_executor_is_one_registry_line(tmp_path, monkeypatch, capsys):
    """No Literal in RunConfig, no choices in the CLI: a registered executor runs (the same answer files)."""
    monkeypatch.setitem(EXECUTORS._entries, "serial", SerialExecutor)  # EXECUTORS.register, undone after the test
    common = ["run", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", "--limit", "2"]
    assert main([*common, "--name", "threads"]) == 0
    assert main([*common, "--name", "serial", "--executor", "serial"]) == 0
    assert answers(tmp_path / "serial") == answers(tmp_path / "threads") != {}
    manifest = json.loads((tmp_path / "serial" / "manifest.json").read_text())
    assert manifest["config"]["executor"] == "serial" and manifest["sessions"][-1]["executor"] == "serial"


def test_executor_ray_without_ray_installed_is_bad_input(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "ray", None)  # import ray raises ImportError
    args = ["run", "--name", "r", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", "--executor", "ray"]
    assert main(args) == 2
    assert "pip install -e '.[ray]'" in capsys.readouterr().err
    assert not list((tmp_path / "r").glob("*/*.json"))


@needs_ray
def test_a_killed_driver_resumes_without_loss_or_duplicates(tmp_path, ray_cluster, project_root):
    import signal
    import subprocess
    import sys
    import time

    args = ["run", "--name", "k", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet",
            "--concurrency", "2", "--executor", "ray"]
    proc = subprocess.Popen([sys.executable, "-m", "runners.cli", *args, "--backend-option", "delay_s=0.4"],
                            cwd=project_root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # its own local cluster, which dies with it
    run_dir = tmp_path / "k"
    deadline = time.monotonic() + 120
    while len(list(run_dir.glob("*/*.json"))) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    # its cluster's processes (in the same session) die with it; a worker may outlive it a moment
    deadline = time.monotonic() + 60
    while session_processes(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not session_processes(proc.pid), "the killed driver's Ray processes must end"
    done = answers(run_dir)
    assert 2 <= len(done) < 6, "the kill should land mid-run"
    assert main(args) == 0  # the same command, on this module's cluster
    after = answers(run_dir)
    assert len(after) == 6 and all(after[name] == content for name, content in done.items())
    ids = [s["query_id"] for s in stats_lines(run_dir)]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 6


def test_each_worker_gets_its_share_of_the_rate_limits_and_the_adopted_model():
    from runners.execution.executors import worker_config

    class Adopted:
        model = "served-name"  # what the driver's preflight adopted from the endpoint

    cfg = RunConfig(backend="openai-chat", server_rate=8.0, backend_options={"rate_per_s": "6", "timeout": "9"})
    shared = worker_config(cfg, Adopted(), workers=4)
    assert (shared.server_rate, shared.backend_options) == (2.0, {"rate_per_s": 1.5, "timeout": "9"})
    assert shared.model == "served-name" and cfg.model is None and cfg.server_rate == 8.0
    assert worker_config(RunConfig(model="given"), Adopted(), workers=2).model == "given"
    assert worker_config(RunConfig(), object(), workers=2).server_rate is None


def test_the_parser_fan_out_is_refused_on_ray(tmp_path, capsys):
    args = ["run", "--name", "f", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet",
            "--parsers", "openai-tools,openai-tools-strict", "--executor", "ray"]
    assert main(args) == 2
    assert "runs on threads only" in capsys.readouterr().err


@needs_ray
def test_ray_workers_spread_over_several_endpoints_and_skip_a_dead_one(tmp_path, ray_cluster):
    from tests.openai_standin import OpenAIStandin
    from tests.test_endpoints import agent_reply, dead_url, run_args, tool_server

    with OpenAIStandin(respond=agent_reply) as one, OpenAIStandin(respond=agent_reply) as two, \
            tool_server() as first, tool_server() as second:
        assert main(run_args(tmp_path, "live", [one.url], [first.url])) == 0
        dead_model, dead_server = dead_url("/v1"), dead_url()
        args = run_args(tmp_path, "ray", [dead_model, one.url, two.url], [dead_server, first.url, second.url])
        assert main([*args, "--executor", "ray"]) == 0
    assert answers(tmp_path / "ray") == answers(tmp_path / "live")
    endpoints = json.loads((tmp_path / "ray" / "manifest.json").read_text())["sessions"][-1]["endpoints"]
    model = {e["url"]: e for e in endpoints["model"]}  # added up over the worker processes
    assert model[dead_model]["served"] == 0 and 1 <= model[dead_model]["failed"] <= 2  # once per worker at most
    assert model[one.url]["served"] + model[two.url]["served"] == 12
    assert sum(e["served"] for e in endpoints["tool_server"]) == 6


@needs_ray
def test_a_dead_server_stops_dispatch_under_ray(tmp_path, ray_cluster, capsys):
    """The driver stops dispatching once the limit is reached: the rest are recorded as not started."""
    from tests.faulty_http import FaultyServer

    with FaultyServer(["reset"], answers_preflight=True) as dying:  # answers the preflight, then dies
        args = ["run", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", "--name", "stop",
                "--executor", "ray", "--concurrency", "1", "--server", dying.url, "--server-attempts", "1",
                "--stop-after-infra-failures", "2"]
        assert main(args) == 3
    stats = stats_lines(tmp_path / "stop")
    assert len(stats) == 6 and {s["failure_kind"] for s in stats} == {"tool_server"}
    assert sum(not s.get("not_started") for s in stats) == 2  # concurrency 1: the third was never dispatched
    assert "STOPPED EARLY: 4 queries not started" in capsys.readouterr().out
