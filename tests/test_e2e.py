"""runners/serving/engine.py and runners/serving/e2e.py: an engine subprocess on loopback is always stopped and its port freed
(normal end, failed start, start timeout, a failed step, SIGTERM to the orchestrator, the orchestrator killed).

The engine here is `tba serve-model --backend replay`: a real OpenAI-compatible server process that loads no
model, so each start costs a couple of seconds. The real model goes through the same code in test_e2e_light.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from runners.serving.engine import EngineError, EngineSpec, ManagedEngine, command_spec, port_is_free

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def replay_command(folder: Path) -> str:
    (folder / "G1").mkdir(parents=True, exist_ok=True)
    (folder / "G1" / "1_CoT@1.json").write_text('{"trys": []}')
    return (f"{sys.executable} -m runners.cli serve-model --backend replay --model {folder} "
            "--host {host} --port {port} --served-name recorded")


def process_gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie child of ours counts as gone once reaped; ours are reaped by Popen.wait
        time.sleep(0.1)
    return False


def test_engine_serves_then_stops_and_frees_its_port(tmp_path):
    engine = ManagedEngine(command_spec(replay_command(tmp_path), "recorded", startup_timeout=60), tmp_path / "log")
    with engine:
        pid = engine.process.pid
        assert engine.base_url == f"http://127.0.0.1:{engine.port}/v1"
        assert requests.get(f"{engine.base_url}/models", timeout=5).json()["data"][0]["id"] == "recorded"
        assert not port_is_free(engine.port)
    assert port_is_free(engine.port)
    assert process_gone(pid)


def test_an_engine_that_exits_while_starting_is_reported_with_its_log(tmp_path):
    spec = EngineSpec("broken", [sys.executable, "-c", "print('no such model'); raise SystemExit(3)"], "x",
                      startup_timeout=30)
    engine = ManagedEngine(spec, tmp_path / "log")
    with pytest.raises(EngineError, match=r"exited with status 3[\s\S]*no such model"):
        engine.start()
    assert engine.process is None and port_is_free(engine.port)


def test_an_engine_that_never_answers_is_killed_after_the_timeout(tmp_path):
    code = "import os, time; print(os.getpid(), '{port}', flush=True); time.sleep(600)"
    engine = ManagedEngine(EngineSpec("silent", [sys.executable, "-c", code], "x", startup_timeout=1.5),
                           tmp_path / "log")
    with pytest.raises(EngineError, match="did not answer"):
        engine.start()
    pid, port = (int(x) for x in (tmp_path / "log").read_text().split())
    assert port == engine.port and engine.process is None
    assert process_gone(pid)


def test_a_command_without_a_port_placeholder_is_refused():
    with pytest.raises(EngineError, match=r"\{port\}"):
        command_spec("python -m some.server --port 8000", "m")


def test_the_engine_dies_with_the_process_that_started_it(tmp_path):
    """SIGKILL leaves no chance to clean up: the kernel's parent-death signal stops the engine."""
    script = (
        "import sys, time\n"
        "from runners.serving.engine import ManagedEngine, command_spec\n"
        f"engine = ManagedEngine(command_spec({replay_command(tmp_path)!r}, 'recorded', 60), {str(tmp_path / 'log')!r})\n"
        "engine.start()\n"
        "print(engine.port, engine.process.pid, flush=True)\n"
        "time.sleep(600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
    pid = None
    try:
        port, pid = (int(x) for x in parent.stdout.readline().split())
        assert not port_is_free(port)
        parent.kill()
        parent.wait(timeout=10)
        assert process_gone(pid), "the engine outlived its parent"
        deadline = time.monotonic() + 10
        while not port_is_free(port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert port_is_free(port)
    finally:
        parent.kill()
        if pid is not None:  # a failing run must not leave the engine behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


def e2e_command(tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "runners.serving.e2e", "--engine-command", replay_command(tmp_path / "engine"),
            "--served-name", "recorded", "--out", str(tmp_path / "out"), "--backends", "openai-completions",
            "--methods", "CoT@1", *extra]


def summary(tmp_path: Path) -> dict:
    [path] = (tmp_path / "out").glob("command-*/e2e-summary.json")
    return json.loads(path.read_text())


def test_a_failed_step_is_reported_and_the_engine_still_stopped(tmp_path):
    result = subprocess.run(e2e_command(tmp_path, "--groups", "G9_nonexistent"), cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    data = summary(tmp_path)
    assert data["ok"] is False and data["port_freed"] is True
    [run] = data["runs"]
    assert run["run_exit"] == 2 and "evaluate_exit" not in run  # nothing to evaluate
    port = int(data["base_url"].rsplit(":", 1)[1].split("/")[0])
    assert port_is_free(port)
    assert "engine stopped; port" in result.stdout and "| openai-completions-CoT1 | 0 |" in result.stdout


def test_sigterm_to_the_orchestrator_stops_the_engine(tmp_path):
    process = subprocess.Popen(e2e_command(tmp_path), cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        for line in process.stdout:
            if line.startswith("engine ready at"):
                break
        else:
            pytest.fail(f"the engine never came up (exit {process.wait()})")
        url, pid = line.split()[3], int(line.split("(pid ")[1].split(")")[0])
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        process.send_signal(signal.SIGTERM)
        rest = process.stdout.read()
        assert process.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        process.kill()
    assert f"engine stopped; port {port} free" in rest
    assert process_gone(pid) and port_is_free(port)
    assert summary(tmp_path)["port_freed"] is True


def test_unknown_profile_fails_before_any_engine_starts(tmp_path):
    result = subprocess.run(e2e_command(tmp_path, "--profile", "nope"), cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0 and "known profiles: smollm2, toolllama" in result.stderr
    assert "starting" not in result.stdout


@pytest.mark.parametrize("backend", ["chat", "completions"])
def test_the_e2e_smollm2_configs_give_a_final_answer_the_same_tokens_as_smollm2(backend):
    from runners.config import load_yaml

    configs = PROJECT_ROOT / "runners" / "configs"
    e2e = load_yaml(configs / f"e2e-smollm2-{backend}.yaml")
    assert e2e["max_tokens"] == load_yaml(configs / "smollm2.yaml")["max_tokens"] >= 256
