"""``tba``: one entry point for every job (main.py); sub-commands live in cli/commands/, one module each.
Flags in, one call below, exit codes out."""

from .main import TbaParser, build_parser, close_matches, did_you_mean, main

__all__ = ["TbaParser", "build_parser", "close_matches", "did_you_mean", "main"]
