"""The environment step: Finish semantics, name lookup, status codes 0-12, observations."""

from .lookup import NameMatch, match_name
from .observation import render, status_for, truncate
from .step import FINISH, GIVE_ANSWER, GIVE_UP, StepResult, ToolEnv

__all__ = ["FINISH", "GIVE_ANSWER", "GIVE_UP", "NameMatch", "StepResult", "ToolEnv", "match_name", "render",
           "status_for", "truncate"]
