"""The Makefile's own plumbing, in Python: every target's command (make_recipes.py), `make help`'s page, the
refusal of an unknown command-line variable (with the closest known name) and the name of `make eval`'s run folder.

Why it exists: written in make's language (nested subst, awk programs inside $(shell), shell quoting of every
value) these were untested and unreadable, and a value pasted into a recipe's shell line was run by that shell
(`make eval RUN='$$(touch F)'` ran touch); here each is a function with unit tests (tests/test_make_front.py,
tests/test_make_values.py), and the values reach the commands as data: the Makefile exports every variable into
the recipe's environment, `run TARGET` builds the argv from it and executes it without a shell. It runs with the
system python3 ($(PYTHON)) before `make install` has made .venv, so it imports the standard library only, never
the package.

    make_front.py run TARGET                           the target's command from the environment, executed (make -n:
                                                       printed)
    make_front.py help MAKEFILE...                     the values: the environment (make exports every variable)
    make_front.py check-vars MAKEFILE... -- NAME=VALUE...  the refusal (make stops with it) or nothing; exit 0 either way
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

if __package__:
    from .make_recipes import RECIPES, Refused, Values, derived_defaults
else:  # run by the Makefile as a script, before the package is installed: its sibling from its own folder
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # (python -I leaves that folder off the path)
    from make_recipes import RECIPES, Refused, Values, derived_defaults

# make's own variables a command line may set (make reads them, no target names them)
MAKE_OWN_VARIABLES = ("MAKEFLAGS", "GNUMAKEFLAGS", "MFLAGS", "MAKEFILES", "MAKE", "MAKESHELL", "SHELL",
                      ".SHELLFLAGS", ".DEFAULT_GOAL")
ASSIGNED = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:::|[:?+!])?=", re.M)
SET_IF_UNSET = re.compile(r"^([A-Z][A-Z0-9_]*)[ \t]*\?=", re.M)  # the ?= variables: what a user sets
REFERENCED = re.compile(r"\$\(([A-Z][A-Z0-9_]*)[):]")  # $(NAME) and $(NAME:a=b)
TARGET_LINE = re.compile(r"^([a-zA-Z0-9_-]+):.*## (.*)$", re.M)  # the text after the last "## "
HELP_REFERENCE = re.compile(r"\$\(([A-Za-z0-9_]+)\)")


# ---- check-vars: a command-line variable no target reads is refused, since make would ignore it -----------------

def known_variables(makefile_texts: Iterable[str]) -> list[str]:
    """Every name a makefile assigns or reads (as $(NAME)), and make's own; sorted as make's $(sort) sorts."""
    names = set(MAKE_OWN_VARIABLES)
    for text in makefile_texts:
        names.update(ASSIGNED.findall(text))
        names.update(REFERENCED.findall(text))
    return sorted(names)


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: insertions, deletions and substitutions of one character each."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def closest_variable(wanted: str, known: Iterable[str]) -> str | None:
    """The known name nearest to ``wanted`` ignoring case (the first in ``known`` on a tie), if it is near
    enough to be a typo: at most 2 edits, or at most a third of the name's length."""
    best, least = None, 0
    for name in known:
        distance = edit_distance(wanted.upper(), name.upper())
        if best is None or distance < least:
            best, least = name, distance
    return best if best is not None and (least <= 2 or 3 * least <= len(wanted)) else None


def unknown_variables_message(given: Iterable[str], known: Iterable[str]) -> str:
    """The refusal of every given name that is not known ("" when all are), each with its closest known name."""
    known = list(known)
    parts = []
    for name in given:
        if name in known:
            continue
        near = closest_variable(name, known)
        parts.append(f"unknown variable {name}; did you mean {near}?" if near
                     else f"unknown variable {name} (no target reads it)")
    return " ".join(parts) + " (`make help` lists the variables)" if parts else ""


# variables make itself reads as file names (a rule's target: $(VENV)/.installed): make splits them at whitespace
# and reads : % # ; * ? [ ] as its own syntax there, so such a value cannot be passed through as data
TARGET_PATH_VARIABLES = ("VENV", "VLLM_VENV")
MAKE_SPECIAL = re.compile(r"[\s:%#;*?\[\]=]")


def target_path_message(assignments: Mapping[str, str]) -> str:
    """The refusal of a value make would read as rule syntax ("" when there is none)."""
    parts = []
    for name in TARGET_PATH_VARIABLES:
        value = assignments.get(name)
        if value is not None and (MAKE_SPECIAL.search(value) or not value):
            parts.append(f"{name}={value!r}: make reads this folder as a rule's target, so it cannot hold "
                         "whitespace or any of : % # ; * ? [ ] = (choose a folder without them)")
    return " ".join(parts)


# ---- run: a target's command from the environment, executed without a shell ---------------------------------------

def make_flags(environ: Mapping[str, str]) -> str:
    """make's one-letter flags (MAKEFLAGS' first word: "ns" for -n -s), "" when none."""
    words = environ.get("MAKEFLAGS", "").split()
    return words[0] if words and not words[0].startswith("-") else ""


def child_environment(environ: Mapping[str, str], makefiles: list[Path]) -> dict[str, str]:
    """The command's environment: the recipe's, less the Makefile's own variables (make exports them all so that
    they reach this script as data; the command reads its settings from its flags, and a tool that reads
    variables of its own, such as vLLM's VLLM_*, would otherwise see ours)."""
    texts = [path.read_text(encoding="utf-8") for path in makefiles if path.is_file()]
    ours = set(known_variables(texts)) - set(MAKE_OWN_VARIABLES) if texts else set()
    return {k: v for k, v in environ.items() if k not in ours}


def run_target(target: str, environ: Mapping[str, str], makefiles: list[Path]) -> int:
    """Build the target's commands from the variables and run them one after another (the last one in place of
    this process: its signals and exit status are the target's). make -n: print them only."""
    try:
        commands = RECIPES[target](Values(environ))
    except Refused as exc:
        print(f"make {target}: error: {exc}\n  fix: {exc.fix}", file=sys.stderr)
        return 2
    flags = make_flags(environ)
    dry, silent = any(f in flags for f in "nqt"), "s" in flags
    env = child_environment(environ, makefiles)
    for index, command in enumerate(commands):
        if dry or not silent:
            print(command.text(), flush=True)
        if dry:
            continue
        full = {**env, **command.env}
        try:
            if index == len(commands) - 1:
                os.execvpe(command.argv[0], command.argv, full)
            status = run_child(command.argv, full)
        except FileNotFoundError:
            print(f"make {target}: error: no program {command.argv[0]} (VENV={environ.get('VENV', '')!r})\n"
                  "  fix: `make install` makes .venv; or VENV=DIR, a folder with an installed environment",
                  file=sys.stderr)
            return 2
        if status != 0:
            return status
    return 0


def run_child(argv: list[str], env: dict[str, str]) -> int:
    """One command of several; Ctrl-C reaches it too (one process group): wait for it to end, then stop."""
    child = subprocess.Popen(argv, env=env)
    try:
        return child.wait()
    except KeyboardInterrupt:
        return child.wait() or 130


# ---- help: each target's "## " line with $(VAR) replaced by its value now, then the ?= variables ------------------

def fill_in(text: str, values: Mapping[str, str]) -> str:
    """Each $(NAME) in ``text`` replaced by its value ("(empty)" when empty); a name without one stays as written."""
    def value(match: re.Match) -> str:
        name = match.group(1)
        return (values[name] or "(empty)") if name in values else match.group(0)
    return HELP_REFERENCE.sub(value, text)


def help_page(makefile_texts: list[str], values: Mapping[str, str]) -> str:
    """The targets (of every makefile, sorted) with their "## " text filled in, then the ?= variables of the
    first makefile in file order with their values."""
    targets = sorted(match.groups() for text in makefile_texts for match in TARGET_LINE.finditer(text))
    lines = ["Targets (make TARGET [VAR=value ...]):"]
    lines += [f"  {target:<16} {fill_in(text, values)}" for target, text in targets]
    lines.append("Variables (now):")
    shown = dict.fromkeys(SET_IF_UNSET.findall(makefile_texts[0])) if makefile_texts else {}
    lines += [f"  {name}={values.get(name) or '(empty)'}" for name in shown]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make_front.py", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run a target's command, built from the variables in the environment")
    run.add_argument("target", choices=sorted(RECIPES))
    run.add_argument("--makefile", action="append", type=Path, default=None,
                     help="the Makefile(s) naming the variables (default: ./Makefile)")
    show = commands.add_parser("help", help="print `make help`'s page")
    show.add_argument("makefiles", nargs="+", type=Path)
    check = commands.add_parser("check-vars", help="refuse command-line variables no makefile names",
                                usage="make_front.py check-vars MAKEFILE... -- NAME=VALUE...")
    check.add_argument("makefiles", nargs="+", type=Path)
    argv = sys.argv[1:] if argv is None else argv
    # check-vars: the makefiles, then after "--" the command line's variables (argparse would give both to one)
    given = argv[argv.index("--") + 1:] if "--" in argv else []
    arguments = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if arguments.command == "run":
        return run_target(arguments.target, os.environ, arguments.makefile or [Path("Makefile")])
    texts = [path.read_text(encoding="utf-8") for path in arguments.makefiles]
    if arguments.command == "check-vars":
        assignments = dict(item.partition("=")[::2] for item in given)
        message = " ".join(part for part in (unknown_variables_message(assignments, known_variables(texts)),
                                             target_path_message(assignments)) if part)
        if message:
            print(message)
        return 0  # printed or not: make stops on the text, and on no output at all only if this never ran
    # the recipe's environment holds every variable (the Makefile exports them all), the derived ones filled in
    sys.stdout.write(help_page(texts, derived_defaults(os.environ)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
