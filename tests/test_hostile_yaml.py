"""Hostile YAML in a run config (`tba run --config`) or a sweep spec (`tba sweep`): an alias bomb (a few lines
that stand for 387 million values), an alias inside its own anchor, lists nested 50,000 deep. Each is exit 2
naming the file, in bounded time: before, the sweep hung copying the bomb, and the others were tracebacks.
The commands run as subprocesses so that a hang fails the test (its timeout) instead of stopping the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent
BOMB = "\n".join(['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
                 + [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)])
SPEC_HEAD = "name: hostile\naxes: {seed: [1]}\njudges: []\nbase:\n"
CASES = {
    "alias bomb": ("  dialect_options:\n" + "\n".join("    " + line for line in BOMB.splitlines()),
                   "more than 100,000 values once its YAML aliases"),
    "alias in its own anchor": ("  dialect_options: &d\n    me: *d", "refers to the value that holds it"),
    "nested 50,000 deep": ("  dialect_options: {a: " + "[" * 50_000 + "]" * 50_000 + "}", "nested too deeply"),
}


def tba(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners.cli", *args], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_sweep_spec_is_exit_2_naming_the_file(tmp_path, case):
    body, needle = CASES[case]
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC_HEAD + body + "\n", encoding="utf-8")
    done = tba("sweep", str(spec), "--dry-run", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{spec}: " in done.stderr and needle in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_run_config_is_exit_2_naming_the_file(tmp_path, case):
    body, needle = CASES[case]
    config = tmp_path / "run.yaml"
    config.write_text("backend: scripted\n" + body.replace("\n  ", "\n").lstrip() + "\n", encoding="utf-8")
    done = tba("run", "--config", str(config), "--name", "x", "--out-root", str(tmp_path / "runs"), "--quiet")
    assert done.returncode == 2, done.stderr[-2000:]
    assert f"{config}: " in done.stderr and needle in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_evaluator_config_is_refused_naming_the_file(tmp_path, case):
    """`--evaluator DIR` reads DIR/config.yaml: the same limits (toolbench_adapter/files/input_files.py)."""
    from toolbench_adapter.errors import InputError
    from toolbench_adapter.evaluation.evaluator import load_evaluator

    body, needle = CASES[case]
    (tmp_path / "config.yaml").write_text("completions_kwargs:\n" + body + "\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        load_evaluator(tmp_path)
    assert needle in refused.value.problem and str(tmp_path / "config.yaml") == refused.value.path
