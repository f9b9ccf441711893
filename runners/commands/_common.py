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
