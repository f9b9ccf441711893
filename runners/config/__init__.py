"""What defines a run: RunConfig (every setting, from flags or a YAML file in runners/configs/, typed and checked:
run_config.py, settings_check.py) and the queries it selects (selection.py). The CLI and the run both read it."""

from .run_config import EXAMPLES, EXPECTED, RunConfig, load_yaml, problems_error, settings_problems
from .selection import select_queries

__all__ = ["EXAMPLES", "EXPECTED", "RunConfig", "load_yaml", "problems_error", "select_queries", "settings_problems"]
