"""``tba``: one entry point for every job. Sub-commands live in runners/commands/, one module each."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys

from toolbench_adapter.errors import InputError
from toolbench_adapter.registry import UnknownNameError

from . import commands

DESCRIPTION = """\
toolbench-adapter: run tool-using LLMs on StableToolBench / ToolBench, compare parsers, reproduce
leaderboard numbers. Every command takes --help. Bad input exits with status 2 and says which file,
which field and how to fix it."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tba", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command as typed: tba run prints how to redo it
    try:
        result = args.func(args)
    except (InputError, UnknownNameError) as exc:
        print(f"tba {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `tba functions ... | head`: the reader left, nothing is wrong
        sys.stdout = open(os.devnull, "w")
        return 0
    except KeyboardInterrupt:
        print(f"tba {args.command}: interrupted", file=sys.stderr)
        return 130
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
