"""Issue 40 item 5: the verdict's rule as written (evaluation/comparability.py's docstring: the tables a reader
is given) and the code that decides it agree, for every mix of condition states; the conditions the table lists
are the ones the code measures, in the line's order, and those it says are never only declared never are."""

from __future__ import annotations

import inspect
import itertools
import re

import pytest

from toolbench_adapter.evaluation import comparability
from toolbench_adapter.evaluation.comparability import (
    CONDITIONS,
    DECLARED,
    FAILED,
    VERIFIED,
    Condition,
    Verdict,
    decide,
    verdict,
)

STATES = (VERIFIED, DECLARED, FAILED)


def tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of a text: rows of cells, the separator row left out."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r"-+", c) for c in cells):
                current.append(cells)
        elif current:
            found.append(current)
            current = []
    return found


def rule_table() -> list[list[str]]:
    table = tables(comparability.__doc__)[0]
    assert table[0] == ["a condition failed", "a condition only declared", "verdict", "the line"]
    return table[1:]


def matches(cell: str, present: bool) -> bool:
    return cell == "–" or (cell == "yes") == present


@pytest.mark.parametrize("count", [1, 2, 3, len(CONDITIONS)])
def test_the_rule_table_and_decide_agree_for_every_mix_of_states(count):
    rows = rule_table()
    for states in itertools.product(STATES, repeat=count):
        written = [row for row in rows if matches(row[0], FAILED in states) and matches(row[1], DECLARED in states)]
        assert len(written) == 1, (states, written)  # the table decides every mix, once
        assert decide(states) == written[0][2], states
        conditions = tuple(Condition(f"c{i}", state, "m", f"figure {i}") for i, state in enumerate(states))
        line = Verdict(conditions).line
        head = written[0][3].split(": ", 1)[0]
        assert line.startswith(head + ":"), (line, head)
        if decide(states) == comparability.YES:
            assert line == written[0][3]
        # the line names exactly the conditions its row says: each failed one, or each declared one
        named = FAILED if FAILED in states else DECLARED if DECLARED in states else None
        for i, state in enumerate(states):
            assert (f"c{i}: figure {i}" in line) == (state == named), (states, line)


def test_the_conditions_table_lists_what_the_code_measures_in_order():
    table = tables(comparability.__doc__)[1]
    assert table[0] == ["condition", "measured", "verified", "declared", "failed"]
    assert tuple(row[0] for row in table[1:]) == CONDITIONS
    assert tuple(c.name for c in verdict(None, None).conditions) == CONDITIONS


def test_a_condition_the_table_says_is_never_declared_has_no_declared_state_in_its_code():
    readers = {"agent": comparability._agent, "queries": comparability._queries,
               "tool documents": comparability._tool_documents, "tool responses": comparability._tool_responses,
               "judge": comparability._judge, "method": comparability._method}
    for row in tables(comparability.__doc__)[1][1:]:
        source = inspect.getsource(readers[row[0]])
        assert ("DECLARED" in source) == (row[3] != "never"), row[0]
        assert "FAILED" in source and "VERIFIED" in source, row[0]
