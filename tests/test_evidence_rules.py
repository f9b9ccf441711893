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


def _responses(made_by: dict, simulator: str = "llm", **endpoint) -> dict:
    """Tool-response facts of a run's own server over 100 calls: ``made_by`` simulated, the rest from the cache."""
    found = {"simulator": simulator, "model": "gpt-4-turbo", "host": "api.openai.com", "listed": True,
             "prompt": comparability.PROMPT_OWN, **endpoint}
    simulated = sum(made_by.values())
    return {"server": "embedded", "simulator": simulator, "requests": 100, "hits": 100 - simulated,
            "simulated_hits": 0, "misses": simulated, "made_by": made_by, "simulator_endpoints": [found]}


# each phrase of the table's tool-responses row, the column it stands in, and facts the code must put there
SIMULATOR_ROWS = [
    (VERIFIED, "every response from the cache, misses answered by gpt-4-turbo listed by its provider's own API host",
     _responses({})),
    (DECLARED, "responses made by gpt-4-turbo with this project's simulation prompt",
     _responses({"llm[gpt-4-turbo@api.openai.com]": 3})),
    (DECLARED, "gpt-4-turbo at another host", _responses({}, host="127.0.0.1")),
    (DECLARED, "MirrorAPI (a name cannot prove its weights)",
     _responses({}, "mirrorapi", model="MirrorAPI-Cache", host="127.0.0.1", prompt=comparability.PROMPT_FILE)),
    (DECLARED, "an external tool server", {**_responses({}), "server": "http://127.0.0.1:8080/virtual"}),
    (FAILED, "a synthetic response", _responses({"schema": 3})),
    (FAILED, "the schema or no simulator", _responses({}, "schema")),
    (FAILED, "another model, or one not recorded or not listed", _responses({}, model="SmolLM2-135M")),
    (FAILED, "another model, or one not recorded or not listed", _responses({"llm": 3})),
    (FAILED, "another model, or one not recorded or not listed", _responses({}, listed=None)),
    (FAILED, "MirrorAPI with a stand-in prompt",
     _responses({}, "mirrorapi", model="m", prompt=comparability.PROMPT_STAND_IN)),
    (FAILED, "counts not reported", {**_responses({}), "made_by": None}),
]


@pytest.mark.parametrize(("state", "phrase", "facts"), SIMULATOR_ROWS)
def test_the_tool_responses_row_says_what_the_code_decides_for_the_simulator(state, phrase, facts):
    """The simulator is judged as the judge is (the follow-up to issue 40): each case the table's row names is in
    the column the code puts it."""
    header, *rows = tables(comparability.__doc__)[1]
    row = next(r for r in rows if r[0] == "tool responses")
    assert phrase in row[header.index(state)], (state, phrase)
    assert comparability._tool_responses(facts).state == state, comparability._tool_responses(facts)


@pytest.mark.parametrize("url, host", [
    ("https://api.openai.com/v1", "api.openai.com"),
    ("https://api.openai.com:443/v1", "api.openai.com"),
    ("http://api.openai.com/v1", "http://api.openai.com"),  # a proxy or tunnel under the provider's name
    ("https://api.openai.com:8443/v1", "https://api.openai.com:8443"),
    ("http://user:secret@api.openai.com:8080/v1", "http://api.openai.com:8080"),  # no credentials in a verdict
    ("https://api.openai.com:x/v1", "https://api.openai.com:x"),
    ("http://127.0.0.1:8000/v1", "127.0.0.1"),
])
def test_a_provider_host_counts_only_as_the_provider_serves_its_api(url, host):
    assert comparability.endpoint_host(url) == host
    assert comparability.provider_host(url) is (host == "api.openai.com")


@pytest.mark.parametrize("url, state", [("https://api.openai.com/v1", comparability.VERIFIED),
                                        ("http://api.openai.com:8080/v1", comparability.DECLARED)])
def test_a_judge_named_like_the_provider_at_a_tunnel_is_declared(url, state):
    from toolbench_adapter.protocol.leaderboard import GPT_CACHE_JUDGE

    judge = {"model": GPT_CACHE_JUDGE, "evaluate_times": 3, "evaluator": "default", "endpoints": [url],
             "listed": True}
    condition = comparability._judge(judge, "llm")
    assert condition.state == state, condition
    if state == comparability.DECLARED:
        assert "http://api.openai.com:8080 is not the provider's API host" in condition.figure


def test_a_simulator_at_a_tunnel_under_the_provider_name_is_declared_in_its_mark():
    from toolbench_adapter.server.simulators.base import SimulatorOptions
    from toolbench_adapter.server.simulators.chat import maker_of

    mark = maker_of("llm", SimulatorOptions(model="gpt-4-turbo", base_url="http://api.openai.com:8080/v1"))
    assert mark == "llm[gpt-4-turbo@http://api.openai.com:8080]"
    assert comparability.judge_maker(mark)[0] == comparability.DECLARED


@pytest.mark.parametrize("backend, state", [("hf", comparability.VERIFIED), ("openai-chat", comparability.VERIFIED),
                                            ("openai-completions", comparability.VERIFIED),
                                            ("my-plugin", comparability.DECLARED),
                                            ("scripted", comparability.FAILED)])
def test_only_a_shipped_model_backend_verifies_the_agent(backend, state):
    """A backend another package registers (the toolbench_adapter.backends entry point) may be anything: a name
    is no evidence that a model answered."""
    condition = comparability._agent({"backend": backend, "model": "some-model"})
    assert condition.state == state, condition
    if state == comparability.DECLARED:
        assert "does not ship" in condition.figure and backend in condition.figure
