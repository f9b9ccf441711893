"""Judge audits: re-judging released labels, agreement with them, and the judge cards that cite the result."""
