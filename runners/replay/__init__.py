"""`tba replay`: recorded answer files (any layout) through the live pipeline (pipeline.py), and which DFSDT
backtracking rule a recorded tree was searched with (search_rule.py)."""

from .pipeline import REPLAY_LINES, ReplayResult, format_totals, replay

__all__ = ["REPLAY_LINES", "ReplayResult", "format_totals", "replay"]
