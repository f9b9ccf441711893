"""The Makefile's own plumbing, in Python: `make help`'s page, the refusal of an unknown command-line variable
(with the closest known name) and the name of `make eval`'s run folder.

Why it exists: written in make's language (nested subst, awk programs inside $(shell), shell quoting of every
value) these were untested and unreadable; here each is a function with unit tests (tests/test_make_front.py).
It runs with the system python3 ($(PYTHON)) before `make install` has made .venv, so it imports the standard
library only, never the package.

    make_front.py help MAKEFILE...                  the values: NAME=VALUE lines in $MAKE_VALUES, else the environment
    make_front.py check-vars MAKEFILE... -- NAME...  the refusal (make stops with it) or nothing; exit 0 either way
    make_front.py run-name --backend=B --method=M --constrain=C --on-invalid=P [--trials=K]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

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


# ---- run-name: make eval's run folder says every setting that is not upstream's ----------------------------------

def run_name(backend: str, method: str, constrain: str = "", on_invalid: str = "", trials: str = "") -> str:
    """eval-BACKEND-METHOD (its "@" dropped), then -constrain-C unless C is empty or off, then the on-invalid
    policy with ":" as "-" unless it is empty or observe, then -trialsK unless K is empty or 1 (a set of trials is
    a folder of its own kind): e.g. eval-hf-CoT1-constrain-schema-reask-2, eval-openai-chat-CoT1-trials5."""
    constrain, on_invalid, trials = constrain.strip(), on_invalid.strip(), trials.strip()
    name = f"eval-{backend.strip()}-{method.strip().replace('@', '')}"
    if constrain and constrain != "off":
        name += f"-constrain-{constrain}"
    if on_invalid and on_invalid != "observe":
        name += "-" + on_invalid.replace(":", "-")
    if trials and trials != "1":
        name += f"-trials{trials}"
    return name


# ---- help: each target's "## " line with $(VAR) replaced by its value now, then the ?= variables ------------------

def parse_values(lines: str) -> dict[str, str]:
    """NAME=VALUE lines (make's foreach puts a space before each line after the first) as a mapping."""
    values = {}
    for line in lines.split("\n"):
        name, equals, value = line.lstrip().partition("=")
        if equals and re.fullmatch(r"[A-Za-z_.][A-Za-z0-9_.]*", name):
            values[name] = value
    return values


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
    show = commands.add_parser("help", help="print `make help`'s page")
    show.add_argument("makefiles", nargs="+", type=Path)
    check = commands.add_parser("check-vars", help="refuse command-line variables no makefile names",
                                usage="make_front.py check-vars MAKEFILE... -- NAME...")
    check.add_argument("makefiles", nargs="+", type=Path)
    name = commands.add_parser("run-name", help="make eval's run folder name")
    for flag in ("--backend", "--method", "--constrain", "--on-invalid", "--trials"):
        name.add_argument(flag, default="")
    argv = sys.argv[1:] if argv is None else argv
    # check-vars: the makefiles, then after "--" the command line's variables (argparse would give both to one)
    given = argv[argv.index("--") + 1:] if "--" in argv else []
    arguments = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    if arguments.command == "run-name":
        print(run_name(arguments.backend, arguments.method, arguments.constrain, arguments.on_invalid,
                       arguments.trials))
        return 0
    texts = [path.read_text(encoding="utf-8") for path in arguments.makefiles]
    if arguments.command == "check-vars":
        message = unknown_variables_message(given, known_variables(texts))
        if message:
            print(message)
        return 0  # printed or not: make stops on the text, and on no output at all only if this never ran
    # the recipe's environment holds the command line's and make's exported variables; MAKE_VALUES the rest
    values = {**os.environ, **parse_values(os.environ.get("MAKE_VALUES", ""))}
    sys.stdout.write(help_page(texts, values))
    return 0


if __name__ == "__main__":
    sys.exit(main())
