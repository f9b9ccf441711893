"""Flags shared by several commands."""

from __future__ import annotations

import argparse
import os


def add_stb_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stb-root",
        default=None,
        help="StableToolBench checkout (holds solvable_queries/). Default: $TBA_STB_ROOT, else the sample "
        "set in data/ that ships with the project.",
    )
    parser.add_argument(
        "--tool-root",
        default=None,
        help="tool environment folder (toolenv/tools/{Category}/{tool}.json) for tool descriptions. "
        "Default: $TBA_TOOL_ROOT, else <stb-root>/toolenv/tools when present; without one the "
        "description line reads None, as upstream writes for an empty description.",
    )


def stb_root_arg(args: argparse.Namespace) -> str | None:
    return args.stb_root or os.environ.get("TBA_STB_ROOT") or None


def add_compat(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compat", choices=("stb", "strict"), default="stb",
                        help="stb (default) reproduces StableToolBench quirks that change numbers; strict "
                        "corrects them (see toolbench_adapter/compat.py)")


def parse_options(pairs: list[str]) -> dict:
    """KEY=VALUE pairs -> dict; true/false become booleans."""
    from toolbench_adapter.errors import InputError

    options: dict = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"option {pair!r} is not KEY=VALUE", field="--option", fix="write e.g. history=thought")
        options[key] = {"true": True, "false": False}.get(value.lower(), value)
    return options
