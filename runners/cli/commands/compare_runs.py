"""tba compare-runs: the same command as tba compare-parsers, named for what --runs now compares (runs that differ
in their parser, dialect, --constrain or --on-invalid)."""

from __future__ import annotations

from .compare_parsers import DESCRIPTION, add_command

RUNS_DESCRIPTION = """\
The same command as `tba compare-parsers` (same flags, same output), named for what --runs compares: judged
runs of the same queries that differ in their parser, dialect, --constrain or --on-invalid.

""" + DESCRIPTION


def register(subparsers) -> None:
    add_command(subparsers, "compare-runs", "judged runs side by side (parser, dialect, --constrain, --on-invalid); "
                "the same command as compare-parsers", RUNS_DESCRIPTION)
