"""Issue 41, a sweep's fixed cost: what its cells share (one tool-server listener, each cell still its own server
and facts), the order they start in, and what the command imports. The figures are benchmarks/bench_sweep.py's
(make bench-sweep); these check the shapes that give them."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner

PROJECT_ROOT = Path(__file__).resolve().parent.parent
FACTS = ("requests", "hits", "simulated_hits", "misses")


def test_cells_share_one_tool_server_listener_and_keep_their_own_tool_facts(tmp_path, monkeypatch):
    """Was: every cell started (and stopped: 0.15 s each) an embedded server of its own. Now one listener serves
    them all, each cell behind it with its own VirtualServer: its manifest's tool-response facts are those of the
    same run made alone."""
    from toolbench_adapter.server import runner as server_runner

    started = []
    original = server_runner.EmbeddedServer.start

    def counting_start(self, *args, **kwargs):
        started.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(server_runner.EmbeddedServer, "start", counting_start)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: shared\nbase: {backend: scripted, groups: [G1_instruction, G1_tool, G2_category]}\n"
                    "axes: {seed: [1, 2, 3]}\njudges: []\n", encoding="utf-8")
    assert main(["sweep", str(spec), "--out", str(tmp_path / "sweeps"), "--quiet"]) == 0
    assert len(started) == 1
    started.clear()
    for seed in (1, 2, 3):
        cell = json.loads((tmp_path / "sweeps" / "shared" / str(seed) / "manifest.json").read_text())
        alone = Runner(RunConfig(name=f"alone{seed}", out_root=str(tmp_path / "alone"), backend="scripted", seed=seed,
                                 groups=["G1_instruction", "G1_tool", "G2_category"]), progress=False).run()
        facts, lone = cell["setup_facts"]["tool_responses"], alone["setup_facts"]["tool_responses"]
        assert {k: facts[k] for k in FACTS} == {k: lone[k] for k in FACTS} and facts["requests"] > 0, (facts, lone)
    assert len(started) == 3  # the lone runs: one each, as before


def plan(name: str, url: str | None):
    from runners.sweep.scheduler import CellPlan
    from runners.sweep.spec import Cell

    settings = {"backend": "openai-chat", "base_url": url, "model": "m"} if url else {"backend": "scripted"}
    return CellPlan(cell=Cell(name, {"x": name}, settings), cfg=RunConfig(name=name, **settings), judges=[],
                    redo="")


def test_cells_start_each_model_endpoint_in_turn_one_start_up_at_a_time():
    """Was: all cells started at once, sharing one interpreter lock, so no model call went out before nearly every
    cell was ready. Now one start-up at a time, the endpoints taken in turn."""
    from runners.sweep.scheduler import StartGate, start_order

    plans = [plan("a1", "http://a/v1"), plan("a2", "http://a/v1"), plan("a3", "http://a/v1"),
             plan("b1", "http://b/v1"), plan("s1", None)]
    order = start_order(plans)
    assert order == ["a1", "b1", "s1", "a2", "a3"]
    gate, passed = StartGate(order), []

    def cell(name: str) -> None:
        gate.wait(name)
        passed.append(name)
        time.sleep(0.01)
        gate.passed(name)

    threads = [threading.Thread(target=cell, args=(name,)) for name in reversed(order)]  # asking in the wrong order
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert passed == order


def test_a_start_up_that_never_says_so_holds_the_next_cell_no_longer_than_the_gates_patience():
    from runners.sweep.scheduler import StartGate

    gate = StartGate(["stuck", "next"], patience_s=0.2)
    started = time.monotonic()
    gate.wait("stuck")  # its turn: goes at once, and then says nothing
    gate.wait("next")
    assert 0.15 < time.monotonic() - started < 5


def fresh_python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_tba_imports_the_command_it_runs_and_not_every_other(tmp_path):
    """Was: every command module was imported to build the parser (doctor, the published tables' readers, the
    judge audit's statistics: about a second of a sweep's start-up on a loaded machine)."""
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: s\nbase: {backend: scripted}\naxes: {seed: [1]}\njudges: []\n", encoding="utf-8")
    out = fresh_python(f"""
import sys
from runners.cli import main
assert main(["sweep", {str(spec)!r}, "--out", {str(tmp_path / 'o')!r}, "--dry-run"]) == 0
print(sorted(m for m in ("toolbench_adapter.doctor", "toolbench_adapter.evaluation.published.leaderboards",
                         "toolbench_adapter.evaluation.audit.agreement", "runners.cli.commands.judge_audit",
                         "runners.cli.commands.reproduce", "runners.cli.commands.run") if m in sys.modules))
""")
    assert out.strip().splitlines()[-1] == "['runners.cli.commands.run']"  # sweep takes run's flags: that one only


def test_a_mistyped_command_still_names_the_closest_commands(capsys):
    """A name that is no command's module: every command is registered, so argparse's refusal knows them all."""
    with pytest.raises(SystemExit) as exit_:
        main(["sweeep", "x.yaml"])
    assert exit_.value.code == 2 and "did you mean sweep?" in capsys.readouterr().err


def test_the_registries_read_the_installed_entry_points_once():
    """Was: each registry's first use scanned every installed distribution's metadata (six scans a sweep)."""
    out = fresh_python("""
import importlib.metadata as metadata
from toolbench_adapter import registry
calls = []
original = registry.entry_points
registry.entry_points = lambda *a, **k: calls.append(1) or original(*a, **k)
from toolbench_adapter.dialects import DIALECTS
from toolbench_adapter.parsers import PARSERS
from runners.models import BACKENDS
for r in (DIALECTS, PARSERS, BACKENDS):
    r.names()
print(len(calls))
""")
    assert out.strip() == "1"


def test_a_command_that_loaded_triton_keeps_its_last_collection_so_nanobind_reports_no_leaks():
    """The exit shortcut (gc.freeze before teardown) left triton's nanobind objects alive: make eval (the local
    model, constrained) ended with a page of "nanobind: leaked 514 functions!". With such an extension loaded the
    teardown collects as usual; without one the shortcut stays."""
    from runners.cli.main import leak_checked_extensions

    pytest.importorskip("triton", reason="triton comes with torch (make install's hf extra)")
    code = "import sys, triton; sys.argv = ['tba', 'queries']; from runners.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "leaked" not in done.stderr and "nanobind" not in done.stderr
    assert leak_checked_extensions({"triton": object()}) == ["triton"]
    assert leak_checked_extensions({"json": object()}) == []
