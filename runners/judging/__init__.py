"""Judging a run folder: convert, judge (threads or Ray tasks: judge_ray.py), leaderboards and the error
taxonomy, each evaluation kept under its judge's identity (evaluate.py)."""
