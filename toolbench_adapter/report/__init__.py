"""Reports: leaderboard tables, error taxonomy, parser comparison, plots."""
