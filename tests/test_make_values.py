"""Issue 41 item 7: make variables reach the commands as data, never through a shell's parser.

Was: `make eval RUN='$$(touch F)'`, backticks in RUN, CONSTRAIN='$$(...)', ON_INVALID='observe|touch F' and a quote in
REPORT_RUN all ran the command (each value was pasted into a recipe's shell line), and RUN='a b' failed
confusingly. Now every variable is exported into the recipe's environment and runners/cli/make_front.py builds and
runs the command without a shell (runners/cli/make_recipes.py).

Two walks over every target and every variable it reads, with hostile values: in process (each recipe's argv
from hostile values: the value arrives whole in an argument, or the recipe refuses it naming the variable), and
through make itself (the real Makefile, a stub environment whose programs record their arguments: no marker file
appears, and each target runs with the values as data or exits 2 naming the variable)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from runners.cli.make_recipes import RECIPES, Refused, Values

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MAKEFILE = PROJECT_ROOT / "Makefile"
needs_make = pytest.mark.skipif(not shutil.which("make"), reason="make is not installed")

LISTS = {"GROUPS", "STRUCT_CELLS", "COMPARE", "PARSER_INPUT"}  # names separated by spaces
ARGS = {"BENCH_ARGS", "SWEEP_ARGS", "E2E_ARGS", "DOCTOR_ARGS"}  # more flags: split as shell words
DERIVED = ("RUN", "PARSER_INPUT", "REPORT_RUN", "REPORT_OUT")  # empty: the recipe computes them
NAME_PARTS = {"BACKEND", "METHOD", "CONSTRAIN", "ON_INVALID", "TRIALS"}  # what make eval's run name is made of
# a refusal may name the variable made from the one given: RUN (from BACKEND, ...), REPORT_RUN (from RUN)
MADE_FROM = {"RUN": NAME_PARTS, "REPORT_RUN": NAME_PARTS | {"RUN"}, "REPORT_OUT": {"REPORT_RUN"}}
# compare-parsers reads RUN (and what makes it) only to look for results/runs/RUN/manifest.json: no such folder,
# the shipped corpus is read, and the value goes nowhere else
LOOKED_UP = {("compare-parsers", name) for name in NAME_PARTS | {"RUN"}}


def hostile(marker: str) -> dict[str, str]:
    """Values a shell would run, each creating ``marker`` if pasted into a recipe (bare, '...' or "..." quoted),
    a space, and a flag."""
    return {"substitution": f"x$(touch {marker})`touch {marker}`;touch {marker}|touch {marker}&",
            "quotes": f"x'\";touch {marker};\"'",
            "space": "a b",
            "flag": "--help"}


def makefile_defaults() -> dict[str, str]:
    """Every ?= variable with its default (make help's "Variables (now)"), the derived ones left empty."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "-s", "help"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
                          timeout=60, check=True)
    values = dict(re.findall(r"^  ([A-Z][A-Z0-9_]*)=(.*)$", done.stdout.split("Variables (now):", 1)[1], re.M))
    values = {k: "" if v == "(empty)" else v for k, v in values.items()}
    return {**values, **dict.fromkeys(DERIVED, "")}


@pytest.fixture(scope="module")
def defaults() -> dict[str, str]:
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    return makefile_defaults()


def recipe_reads(target: str, values: dict[str, str]) -> list[str]:
    """The variables the target's recipe reads (make_recipes.Values records them)."""
    v = Values(values)
    try:
        RECIPES[target](v)
    except Refused:
        pass
    return v.read


def arrived(name: str, value: str, commands) -> bool:
    """The value reached the commands as data: whole inside one argument (a value starting with "-" never as an
    argument of its own, where it would read as a flag), or in a command's environment; a list's words and
    *_ARGS' shell words each so (*_ARGS are flags by design: each word an argument of its own)."""
    arguments = [a for c in commands for a in c.argv]
    environment = [x for c in commands for x in c.env.values()]
    if name in ARGS:
        return all(word in arguments for word in shlex.split(value))
    parts = value.split() if name in LISTS else [value]
    return all(part in environment or any(part in a and not (a == part and part.startswith("-"))
                                          for a in arguments) for part in parts)


def test_every_recipe_takes_every_value_it_reads_as_data_or_refuses_it_by_name(defaults, tmp_path):
    (tmp_path / "run").mkdir()
    base = {**defaults, "REPORT_RUN": str(tmp_path / "run")}  # make report needs a run folder to be there
    walked = 0
    for target in sorted(RECIPES):
        for name in recipe_reads(target, base):
            for kind, value in hostile(str(tmp_path / "M")).items():
                values = {**base, name: value}
                try:
                    commands = RECIPES[target](Values(values))
                except Refused as exc:
                    assert exc.fix and (exc.name == name or name in MADE_FROM.get(exc.name, ())), (target, name, kind,
                                                                                                  exc)
                    continue
                if (target, name) in LOOKED_UP:
                    continue
                assert arrived(name, value, commands), (target, name, kind, [c.argv for c in commands])
                walked += 1
    assert walked > 200  # every target's variables, not a few


@pytest.mark.parametrize("name, value, problem", [("RUN", "a b", "names one folder"),
                                                  ("RUN", "$(touch F)", "names one folder"),
                                                  ("GROUPS", "G1_tool --limit", "would be read as a flag"),
                                                  ("BENCH_ARGS", "--queries 'unclosed", "does not split")])
def test_a_value_that_cannot_be_used_is_refused_naming_the_variable(defaults, name, value, problem):
    target = "bench-runner" if name == "BENCH_ARGS" else "eval"
    with pytest.raises(Refused) as caught:
        RECIPES[target](Values({**defaults, name: value}))
    assert caught.value.name == name and problem in caught.value.problem and caught.value.fix


# ---- through make ----------------------------------------------------------------------------------------------

STUB = """#!/bin/sh
# records its path and arguments, each ended by a NUL (and test's TBA_E2E_VLLM), one record per call
{ for argument in "$0" "$@"; do printf '%s\\0' "$argument"; done; printf 'TBA_E2E_VLLM=%s\\0\\n' "$TBA_E2E_VLLM"; } >> "$STUB_LOG"
"""
PROGRAMS = ("tba", "python", "pip", "ruff", "lint-imports", "mkdocs")
FOLDERS = ("VENV", "VLLM_VENV")  # the stub environments' folders


def stub_environment(folder: Path, stamp: bool = True) -> Path:
    """A folder standing in for .venv (or .venv-vllm): programs that record their arguments and succeed."""
    (folder / "bin").mkdir(parents=True, exist_ok=True)
    for program in PROGRAMS:
        path = folder / "bin" / program
        path.write_text(STUB)
        path.chmod(0o755)
    stamp_file = folder / ".installed"
    if stamp:  # newer than setup.cfg: `make install` has nothing to do
        stamp_file.touch()
    else:
        stamp_file.unlink(missing_ok=True)
    return folder


def make_targets() -> list[str]:
    return re.findall(r"^([a-zA-Z0-9_-]+):.*## ", MAKEFILE.read_text(encoding="utf-8"), re.M)


REFERENCE = re.compile(r"\$\(([A-Z][A-Z0-9_]*)\)|\$\$([A-Z][A-Z0-9_]*)")


def makefile_reads(target: str) -> set[str]:
    """What the Makefile itself reads for a target: $(NAME) and "$$NAME" on its rule line and in its recipe, and
    in the rules it depends on (install's folder rule: VENV and PYTHON, vllm's: VLLM_VENV), PYTHON for the front."""
    lines = re.sub(r"\\\n", " ", MAKEFILE.read_text(encoding="utf-8")).splitlines()
    found: set[str] = set()
    todo, seen = [target], set()
    while todo:
        rule = todo.pop()
        if rule in seen:
            continue
        seen.add(rule)
        for index, line in enumerate(lines):
            head = re.match(r"^([^\s:#=]+)\s*:(?!=)(.*)$", line)
            if not head or head.group(1) != rule:
                continue
            recipe = []
            for following in lines[index + 1:]:
                if not following.startswith("\t"):
                    break
                recipe.append(following)
            for part in [line, *recipe]:
                found |= {a or b for a, b in REFERENCE.findall(part.split("##", 1)[0])}
            prerequisites = head.group(2).split("##", 1)[0]
            todo += [p for p in re.split(r"[\s(),]+", prerequisites) if p in ("install", "vllm", "model")]
            if "$(VENV)/.installed" in prerequisites:
                todo.append("$(VENV)/.installed")
            if "vllm" in re.split(r"[\s(),]+", prerequisites) or rule == "vllm":
                todo.append("$(VLLM_VENV)/.installed")
    return {name for name in found if name not in ("FRONT", "MAKEFILE_LIST")}


def run_make(target: str, variables: dict[str, str], log: Path) -> subprocess.CompletedProcess:
    """make TARGET NAME=VALUE...: each "$" written "$$" (make's own escape on its command line), so the value the
    recipe gets is the one given, $(touch ...) and all, as `make eval RUN='$$(touch F)'` gives it."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env["STUB_LOG"] = str(log)
    assignments = [f"{k}={v.replace('$', '$$')}" for k, v in variables.items()]
    return subprocess.run(["make", "--no-print-directory", target, *assignments],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=120)


def walk_target(target: str, kind: str, defaults: dict[str, str], folder: Path) -> str | None:
    """One target through make with every variable it reads hostile (see below); None, or what went wrong."""
    markers, run_folder = folder / "markers", folder / "run"
    markers.mkdir(parents=True)
    run_folder.mkdir()
    python = shutil.which("python3") or sys.executable
    names = sorted((set(recipe_reads(target, defaults)) if target in RECIPES else set()) | makefile_reads(target))
    given = {name: hostile(str(markers / name))[kind] for name in names}
    for name in FOLDERS:  # a stub environment at the hostile path itself
        if name in given:
            given[name] = str(folder / f"v-{name}-") + given[name]
    refused: list[str] = []
    log = folder / "log"
    for _attempt in range(len(names) + 1):
        variables = {k: v for k, v in given.items() if k not in refused}
        variables.setdefault("PYTHON", python)
        variables.setdefault("REPORT_RUN", str(run_folder))  # make report needs a run folder to be there
        for name in FOLDERS:
            variables.setdefault(name, str(folder / name.lower()))
            stub_environment(Path(variables[name]), stamp=target not in ("install", "vllm"))
        log.unlink(missing_ok=True)
        done = run_make(target, variables, log)
        if list(markers.iterdir()):
            return f"ran {sorted(p.name for p in markers.iterdir())}: {done.stderr[-1000:]}"
        if done.returncode == 0:
            break
        if done.returncode != 2:
            return f"exit {done.returncode}: {done.stderr[-1000:]}"
        mentioned = [n for n in {*given, *MADE_FROM} if re.search(rf"(?<![A-Z_]){n}=", done.stderr)]
        # the variable named, or (a name made of others, RUN of BACKEND ...) those it was made of
        named = [n for n in given if n not in refused and (n in mentioned or any(
            n in MADE_FROM.get(m, ()) for m in mentioned))]
        if not named:
            return f"exit 2 without naming a variable: {done.stderr[-1000:]}"
        refused += named
    else:
        return f"still refused after putting back {refused}"
    recorded = log.read_text(encoding="utf-8", errors="surrogateescape") if log.exists() else ""
    # what the recipe read with these values (a default's parts go unread once the variable itself is given)
    used = (set(recipe_reads(target, {**defaults, **variables})) if target in RECIPES else set()) | makefile_reads(
        target)
    for name, value in given.items():
        if (name in refused or name not in used or name == "PYTHON" or target == "help"
                or (target, name) in LOOKED_UP):
            continue
        words = shlex.split(value) if name in ARGS else value.split() if name in LISTS else [value]
        if not all(word in recorded for word in words):
            return f"{name}'s value is not in the programs' arguments: {recorded[-500:]!r}"
    return None


@needs_make
@pytest.mark.parametrize("kind", ["substitution", "quotes"])
def test_every_target_through_make_runs_no_value_and_names_what_it_refuses(defaults, tmp_path, kind):
    """Every target, every variable it reads set at once to a value a shell would run (each its own marker
    file); a refused variable (exit 2 naming it) is put back and the target run again, until it runs: no marker
    file ever appears, and the stubs' records hold every value still given. (Targets four at a time: each in a
    folder of its own.)"""
    from concurrent.futures import ThreadPoolExecutor

    targets = [t for t in make_targets() if t != "clean"]  # clean reads no variable
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = dict(zip(targets, pool.map(lambda t: walk_target(t, kind, defaults, tmp_path / t), targets),
                            strict=True))
    assert {t: p for t, p in problems.items() if p} == {}
    assert len(targets) >= 30


@needs_make
@pytest.mark.parametrize("target", ["install", "eval", "vllm"])
def test_a_folder_named_with_substitutions_is_a_folder_of_that_name(tmp_path, target):
    """VENV (and VLLM_VENV) may hold $(...) and backticks (not ; | & or spaces: make reads it as a rule's target):
    the stub environment at exactly that path is the one run, and nothing else is."""
    marker = tmp_path / "M"
    name = "VLLM_VENV" if target == "vllm" else "VENV"
    value = f"v$(touch${{IFS}}{marker})`touch${{IFS}}{marker}`"  # no space: $IFS splits the words in a shell
    folder = stub_environment(Path(str(tmp_path / "v-") + value), stamp=target == "eval")
    other = stub_environment(tmp_path / "other")
    log = tmp_path / "log"
    done = run_make(target, {"PYTHON": shutil.which("python3") or sys.executable, name: str(folder),
                             "VENV" if name != "VENV" else "VLLM_VENV": str(other), "BACKEND": "scripted"}, log)
    assert done.returncode == 0, done.stderr[-2000:]
    assert not marker.exists() and str(folder / "bin") in log.read_text(encoding="utf-8")
    assert (folder / ".installed").is_file()  # install and vllm: the stamp at that path


@needs_make
def test_make_eval_with_a_run_name_of_two_words_says_so():
    """Was: tba got RUN's two words as two arguments and said something about an unexpected argument."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(["make", "-n", "eval", "RUN=a b"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert "make eval: error: RUN='a b': names one folder" in done.stderr and "fix: write e.g. RUN=my-run" in done.stderr


@needs_make
def test_make_n_prints_the_command_with_values_quoted_and_runs_nothing(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    marker = tmp_path / "F"
    done = subprocess.run(["make", "-n", "eval", "BACKEND=scripted", f"MODEL=m$$(touch {marker})",
                           "GROUPS=G1_instruction G1_tool"], cwd=PROJECT_ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if " eval --name=" in line)
    argv = shlex.split(line)
    assert f"--model=m$(touch {marker})" in argv and argv[argv.index("--groups") + 1:][:2] == ["G1_instruction",
                                                                                               "G1_tool"]
    assert not marker.exists()
