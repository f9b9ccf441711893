"""The Makefile refuses a command-line variable that no target reads, naming the closest known one.

make ignores a variable it does not use, so `make eval GROUP=G1_tool` (for GROUPS) would run all six groups:
on a paid endpoint, six times the calls asked for. These run `make -n` (nothing is executed) in the project.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")


def make(*arguments: str, env: dict | None = None) -> subprocess.CompletedProcess:
    # a parent make (make test) passes its own command-line variables down through MAKEFLAGS: leave them out
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "-n", *arguments], cwd=PROJECT_ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=60)


def test_a_mistyped_variable_is_refused_with_the_closest_name():
    done = make("eval", "GROUP=G1_tool")
    assert done.returncode == 2
    assert "unknown variable GROUP; did you mean GROUPS?" in done.stderr
    assert "tba run" not in done.stdout  # refused before any recipe


@pytest.mark.parametrize("given, meant", [("groups", "GROUPS"), ("BACKND", "BACKEND"), ("JUDGE_MODLE", "JUDGE_MODEL"),
                                          ("PARSER_INPT", "PARSER_INPUT")])
def test_case_and_small_typos_name_the_variable_meant(given, meant):
    done = make("help", f"{given}=x")
    assert done.returncode == 2 and f"unknown variable {given}; did you mean {meant}?" in done.stderr


def test_a_name_close_to_nothing_says_no_target_reads_it():
    done = make("eval", "TOTALLY_UNRELATED=1")
    assert done.returncode == 2
    assert "unknown variable TOTALLY_UNRELATED (no target reads it)" in done.stderr


def test_known_variables_make_flags_and_the_environment_pass():
    # (a served backend needs a judge of its own: JUDGE_URL, else make stops before the run; tests/test_self_judge.py)
    assert make("eval", "GROUPS=G1_tool", "BACKEND=scripted", "JUDGE_URL=http://127.0.0.1:9/v1", "-j2").returncode == 0
    assert make("eval", env={"GROUP": "G1_tool", "SOMETHING_ELSE": "1"}).returncode == 0  # environment: not checked
    assert make("help", "SHELL=/bin/sh").returncode == 0  # make's own


def test_every_variable_the_makefile_assigns_is_accepted():
    text = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    names = sorted(set(re.findall(r"^([A-Z][A-Z0-9_]*)\s*[:?+]?=", text, re.M)))
    assert {"GROUPS", "BACKEND", "PARSER_INPUT", "STB_ROOT", "BENCH_ARGS", "VENV"} <= set(names)
    # (PYTHON runs the Makefile's plumbing, runners/cli/make_front.py: it must name an interpreter)
    value = {"PYTHON": "python3"}
    refused = {name: done.stderr for name in names
               if (done := make("help", f"{name}={value.get(name, 'x')}")).returncode != 0}
    assert refused == {}


def test_no_default_points_outside_the_project():
    assert "../shared" not in (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")


def test_an_install_that_cannot_reach_pip_says_it_needs_a_network(tmp_path):
    """pip failing (no network, no mirror) ends in exit 2 with what the install needs and the way around it."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, body in (("python", "exit 0"), ("pip", "echo 'ERROR: No matching distribution found' >&2; exit 1")):
        (venv / "bin" / name).write_text(f"#!/bin/sh\n{body}\n")
        (venv / "bin" / name).chmod(0o755)
    base = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "install", f"VENV={venv}"], cwd=PROJECT_ROOT, env=base, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert f"installing into {venv} needs a network once" in done.stderr and "VENV=DIR" in done.stderr
    assert not (venv / ".installed").exists()


def variables_targets_read(text: str) -> set[str]:
    """The variables a target reads: every $(NAME) of its rule line and recipe, and, through the derived variables
    (RUN_FLAGS, TBA, ...: assigned with = or :=) that those name, the variables they read in turn."""
    logical = re.sub(r"\\\n", " ", text).splitlines()  # continuation lines joined
    assigned = {}
    for line in logical:
        if (m := re.match(r"^(?:override\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*([:?+]?=)(.*)$", line)):
            assigned[m.group(1)] = (m.group(2), m.group(3))
    refs = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}:]")
    rule_lines = [line for line in logical if line.startswith("\t")
                  or re.match(r"^[A-Za-z0-9_.$()/-]+\s*:(?!=)", line)]
    todo = {name for line in rule_lines for name in refs.findall(line)}
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in assigned:
            todo |= set(refs.findall(assigned[name][1]))
    # what a user sets: the ?= variables (the derived ones are built from them); make's own names are not
    return {name for name in seen if assigned.get(name, ("?=",))[0] == "?=" and name.isupper()
            and name not in ("MAKEFILE_LIST", "MAKE", "CURDIR")}


def test_make_help_lists_every_variable_a_target_reads():
    """Was: `make help` left out STRUCT_VARIANTS, LIVE_PARSERS, JUDGE_FLAGS' inputs, PARSER_CORPUS, ... . A target's
    variables: those of its rule and shell recipe, and those its command is built from (make_recipes.py)."""
    from runners.cli.make_recipes import RECIPES
    from tests.test_make_values import makefile_defaults, recipe_reads

    defaults = makefile_defaults()
    read = variables_targets_read((PROJECT_ROOT / "Makefile").read_text(encoding="utf-8"))
    read |= {name for target in RECIPES for name in recipe_reads(target, defaults)}
    assert {"STRUCT_CELLS", "LIVE_PARSERS", "PARSER_CORPUS", "CONSTRAIN", "ON_INVALID", "JUDGE_BACKEND",
            "EVAL_TIMES", "VENV", "E2E_ARGS"} <= read
    assert read - set(defaults) == set()


def test_make_eval_passes_constrain_and_on_invalid_for_every_backend():
    offline = make("eval")  # the local model: constrained decoding by default (not upstream), its run named so
    assert "--constrain=schema" in offline.stdout and "--name=eval-hf-CoT1@constrain-schema" in offline.stdout
    upstream = make("eval", "CONSTRAIN=off")
    assert "--constrain=off" in upstream.stdout and "--name=eval-hf-CoT1 " in upstream.stdout
    served = make("eval", "BACKEND=openai-chat", "CONSTRAIN=schema", "ON_INVALID=reask:2")
    assert "--constrain=schema --on-invalid=reask:2" in served.stdout
    assert "--name=eval-openai-chat-CoT1@constrain-schema@reask-2" in served.stdout
    assert "--constrain" not in make("eval", "BACKEND=openai-chat").stdout  # others: upstream unless asked


def test_make_compare_parsers_live_passes_constrain_and_on_invalid_as_make_eval_does():
    """Was: CONSTRAIN did not reach compare-parsers-live (0.0 beside make eval's 41.7 with the local model, and
    nothing said why); its sweep also ran --quiet, silent for minutes."""
    live = make("compare-parsers-live", "ON_INVALID=reask:1").stdout
    sweep = next(line for line in live.splitlines() if " sweep runners/sweeps/compare-parsers-live.yaml" in line)
    assert "--constrain=schema" in sweep and "--on-invalid=reask:1" in sweep and "--quiet" not in sweep
    structured = next(line for line in make("compare-structured").stdout.splitlines()
                      if " sweep runners/sweeps/compare-structured.yaml" in line)
    assert "--constrain" not in structured and "--quiet" not in structured  # there they are the sweep's axes
