"""Scores: SoPR and SoWR arithmetic, the leaderboard's aggregates, paired statistics, counts and score files."""
