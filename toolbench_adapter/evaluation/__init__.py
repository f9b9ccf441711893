"""Judging answers the way StableToolBench does: the judge, SoPR / SoWR / FAC, labels, the judge cache,
counts, evaluations of a run, reproduction of published numbers. Imports nothing here: each module is
imported by name."""
