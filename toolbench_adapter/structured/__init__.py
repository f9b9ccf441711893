"""Structured output in runs: validation of every call, re-asking on invalid turns, constrained decoding.

checks.py   the violations of a parsed turn against the query's function list (what steps.jsonl records)
policy.py   the --on-invalid and --constrain settings
reask.py    the message that asks the model again, naming what was wrong and the exact format expected
grammar.py  the grammar of a reply, per dialect and function list (xgrammar EBNF, and the JSON schema where
            the whole reply is one JSON object)

None of this is upstream: with neither flag a run behaves exactly as upstream's, and only records the violations.
"""
