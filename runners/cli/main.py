"""``tba``: one entry point for every job. Sub-commands live in runners/cli/commands/, one module each."""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import os
import pkgutil
import re
import sys

from toolbench_adapter.errors import InputError
from toolbench_adapter.registry import UnknownNameError

from . import commands
from .make_hints import for_make, make_variables
from .ranges import Ranged

DESCRIPTION = """\
toolbench-adapter: run tool-using LLMs on StableToolBench / ToolBench, compare parsers, reproduce
leaderboard numbers. Every command takes --help. Bad input exits with status 2 and says which file,
which field and how to fix it."""


def close_matches(word: str, candidates) -> list[str]:
    """The candidates nearest to a mistyped word, best first: at most three, and only those about as close as
    the best one (--prot names --port, not also --stb-root)."""
    scored = sorted(((difflib.SequenceMatcher(None, word, str(c)).ratio(), str(c)) for c in candidates),
                    key=lambda pair: -pair[0])
    best = scored[0][0] if scored else 0.0
    return [c for ratio, c in scored[:3] if ratio >= max(0.6, best - 0.05)]


NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # a value such as -1 is no flag


def did_you_mean(matches: list[str]) -> str:
    return "; did you mean " + " or ".join(matches) + "?" if matches else ""


class TbaParser(argparse.ArgumentParser):
    """argparse, with a mistyped flag, command or choice named next to its closest spellings (exit 2).

    Every subcommand parser is one of these (add_subparsers makes its parsers of the parent's class), so each
    one judges the arguments it did not recognise against its own option strings, before argparse would hand
    them up to the top-level parser and print the top-level usage."""

    def parse_known_args(self, args=None, namespace=None):
        self.arguments_given = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.unknown_arguments(extras)
        return namespace, extras

    def error(self, message: str):
        # `tba cache build --answres a`: argparse misses --answers before it looks at the unknown flag, yet the
        # typo is the cause, so name it
        if message.startswith(("the following arguments are required", "one of the arguments")):
            given = [a for a in getattr(self, "arguments_given", []) if self.unknown_flag(a)]
            if given:
                self.unknown_arguments(given)
        super().error(message)

    def options(self) -> list[str]:
        # --help is a candidate too (`tba cache --hlep` names it); -h is too short to be anyone's typo
        return [o for action in self._actions for o in action.option_strings if o != "-h"]

    def unknown_flag(self, argument: str) -> bool:
        name = argument.split("=", 1)[0]
        return (argument.startswith("-") and not NEGATIVE_NUMBER.match(argument)
                and not any(option.startswith(name) for option in self.options()))  # abbreviations are known

    def unknown_arguments(self, extras: list[str]) -> None:
        options = self.options()
        flags = [e.split("=", 1)[0] for e in extras if e.startswith("-") and not NEGATIVE_NUMBER.match(e)]
        if len(flags) == 1:
            message = f"unknown flag {flags[0]}{did_you_mean(close_matches(flags[0], options))}"
        elif flags:
            hints = [did_you_mean(close_matches(flag, options)).removeprefix("; ") for flag in flags]
            message = "unknown flags " + ", ".join(f"{flag} ({hint})" if hint else flag
                                                   for flag, hint in zip(flags, hints, strict=True))
        else:
            message = f"unexpected argument{'s' if len(extras) > 1 else ''}: {' '.join(extras)}"
        # one line and a pointer: the usage of a big command (tba run) would bury the line that matters
        self.exit(2, f"{self.prog}: error: {message}\n({self.prog} --help lists every flag)\n")

    def _get_value(self, action, arg_string):
        # a numeric flag's range (runners/cli/ranges.py) is checked here, while parsing: InputError naming the
        # flag, the range and an example (main: exit 2), before anything is read or started
        if isinstance(action.type, Ranged):
            try:
                return action.type.read(action.dest, arg_string, action.default)
            except InputError as exc:
                exc.command = self.prog
                raise
        return super()._get_value(action, arg_string)

    def _check_value(self, action, value):
        try:
            super()._check_value(action, value)
        except argparse.ArgumentError as exc:
            if not isinstance(value, str) or action.choices is None:
                raise
            hint = did_you_mean(close_matches(value, action.choices))
            if isinstance(action, argparse._SubParsersAction):
                raise argparse.ArgumentError(None, f"unknown command {value!r}{hint} "
                                             f"(choose from {', '.join(action.choices)})") from None
            raise argparse.ArgumentError(action, f"{exc.message}{hint}") from None


def command_modules() -> list[str]:
    """The modules of commands/, each registering the command of its name ("_" as "-")."""
    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_"))


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; given the command line, only its command's (when it names one): importing
    every command's module costs a sweep's start-up about a second on a loaded 2-core machine (numpy, the
    published tables' readers, doctor ...), and each command needs only its own. Help and a mistyped command
    get them all (the list, and did-you-mean)."""
    parser = TbaParser(prog="tba", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    modules = command_modules()
    named = argv[0].replace("-", "_") if argv and not argv[0].startswith("_") else None
    for name in [named] if named in modules else modules:
        module = importlib.import_module(f"{commands.__name__}.{name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """``tba ARGV``; None: the process's own command line (the console script), whose end is the process's."""
    status = _main(argv)
    if argv is None:
        # the interpreter's teardown then skips a last walk of every object the imports made (pydantic's schemas
        # above all): 0.3-0.9 s of a sweep's wind-down on a loaded machine. Nothing is left to collect that matters:
        # every file is written and closed by now; only in-process callers (tests) keep their collector as is.
        sys.stdout.flush()
        sys.stderr.flush()
        if not leak_checked_extensions(sys.modules):
            gc.freeze()
    return status


# extensions built with nanobind print every object of theirs still alive at teardown as a leak (a page of
# "nanobind: leaked 514 functions!"): frozen objects are never freed, so with one loaded (triton: torch and the
# constrained decoder pull it in for the local model) the teardown keeps its last collection
NANOBIND_PACKAGES = ("triton",)


def leak_checked_extensions(modules) -> list[str]:
    """The loaded packages whose extensions report objects alive at exit (NANOBIND_PACKAGES)."""
    return [name for name in NANOBIND_PACKAGES if name in modules]


def _main(argv: list[str] | None) -> int:
    parser = build_parser(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except InputError as exc:  # a flag out of its range
        print(f"{getattr(exc, 'command', 'tba')}: error: {for_user(exc)}", file=sys.stderr)
        return 2
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as typed: tba run prints how to redo it
    try:
        result = args.func(args)
    except (InputError, UnknownNameError) as exc:
        print(f"tba {args.command}: error: {for_user(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tba functions ... | head`: the reader left, nothing is wrong
        sys.stdout = open(os.devnull, "w")
        return 0
    except KeyboardInterrupt:
        print(f"tba {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


def for_user(exc: Exception) -> str:
    """The error as printed: under make, its field and fix name the make variables (make_hints.py)."""
    variables = make_variables()
    if not variables:
        return str(exc)
    if isinstance(exc, InputError):
        return str(InputError(for_make(exc.problem, variables), path=exc.path, field=for_make(exc.field, variables),
                              fix=for_make(exc.fix, variables)))
    return for_make(str(exc), variables)
