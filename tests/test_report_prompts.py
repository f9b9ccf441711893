"""The report shows every prompt: a run records each model call's request in its step records and the page
shows it for every call, valid answer or not (the offline default's every answer is invalid). Also: the set-up
section renders objects (no "[object Object]"), status codes read by number and name, a headline warning
counts failed judgements, and an all-zero pass-rate figure says so instead of drawing an empty frame.

Real runs of the sample set (scripted model, embedded server), evaluated with scripted in-process judges, and
checked in headless Chromium (the browser of tests/test_report_chromium.py). Set TBA_REPORT_EXAMPLE_DIR to keep
the first screens as screenshots."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models.scripted import ScriptedBackend
from tests.test_report_chromium import Chrome, assert_fits, chromium  # noqa: F401 (a fixture)
from tests.test_report_html import react_script
from toolbench_adapter.report import plots, run_index
from toolbench_adapter.report.headline import headline
from toolbench_adapter.report.html import write_report
from toolbench_adapter.report.run_data import load_run
from toolbench_adapter.report.tables import SCORED_ANYWAY

FUNCTION_NAME = re.compile(r"""["']name["']: ["']([^"']+)["']""")
NEVER_FINISHES = {  # by the query id's last digit; every query runs to max_step and ends without an answer
    1: "Thought: I will look.\nAction: get_weather",  # an unknown function, no Action Input
    3: 'Thought: \U0001F326 checking the sky\nAction: {fn}\nAction Input: {{"query": "x"}}',  # beyond the BMP
    4: "I am not sure what to do here.",
    5: "",
    6: 'Thought: t\nAction: {fn}\nAction Input: {{"query": "x"}}\nObservation: {{"made": "up"}}',
    7: "Thought: t\nAction: {fn}\nAction Input: {{'query': 'x',}}",
}


def never_finishes(request):
    if request.prompt is None:  # json-object dialect: chat messages
        name = FUNCTION_NAME.search(request.messages[0]["content"]).group(1)
        return json.dumps({"think": "look it up", "action": name, "arguments": {"query": "x"}})
    name = FUNCTION_NAME.search(request.prompt).group(1)
    return NEVER_FINISHES[request.key["query_id"] % 10].format(fn=name)


class VerdictJudge:
    """An in-process judge client: ``verdict(prompt)`` -> "Solved" / "Unsolved", or None for a reply that holds
    no verdict (after the judge's attempts the judgement fails: JudgeError)."""

    name = "scripted-judge"
    supports_tools = True

    def __init__(self, verdict):
        self.verdict = verdict

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        status = self.verdict(messages[0]["content"])
        if status is None:
            return {"role": "assistant", "content": "I would rather not say.", "tool_calls": None}
        arguments = json.dumps({"reason": f"scripted {status}", "answer_status": status})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


def scripted_run(root: Path, name: str, dialect: str, parser: str, script,
                 method: str = "CoT@1") -> tuple[Path, ScriptedBackend]:
    backend = ScriptedBackend(script)
    cfg = RunConfig(name=name, out_root=str(root), backend="scripted", dialect=dialect, parser=parser,
                    method=method, max_step=4)
    Runner(cfg, backend=backend, progress=False).run()
    return root / name, backend


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    text = scripted_run(root, "invalid-text", "toolllama", "react-find", never_finishes)
    chat = scripted_run(root, "invalid-chat", "json-object", "json-object", never_finishes)
    # DFSDT: branches no answer file keeps, and the diversity prompt added to a node's history when it is
    # expanded again (marked invalid afterwards: the recorded request is the one sent at the time)
    dfs = scripted_run(root, "invalid-dfs", "toolllama", "react-find", never_finishes, "DFS_woFilter_w2")
    chat_dfs = scripted_run(root, "invalid-chat-dfs", "json-object", "json-object", never_finishes,
                            "DFS_woFilter_w2")
    evaluate_run(text[0], VerdictJudge(lambda prompt: "Unsolved"), evaluate_times=2, cache_path=None,
                 progress=False)
    judged, _ = scripted_run(root, "judge-failed", "toolllama", "react-find", react_script)
    # the judge answers nothing usable for the weather queries: those judgements fail (JudgeError)
    failing = VerdictJudge(lambda prompt: None if "weather" in prompt else "Solved")
    evaluate_run(judged, failing, evaluate_times=2, cache_path=None, progress=False, score_anyway=True)
    return {"text": text, "chat": chat, "dfs": dfs, "chat-dfs": chat_dfs, "judge-failed": judged}


def sent_requests(backend: ScriptedBackend) -> dict[str, list]:
    by_query: dict[str, list] = {}
    for request in backend.requests:
        by_query.setdefault(str(request.key["query_id"]), []).append(request)
    return by_query


def decoded_prompts(block: dict) -> list:
    """Every call's prompt from a page block ([prefix shared with the previous call's, in UTF-16 units, rest])."""
    prompts, previous = [], "" if block["kind"] == "text" else []
    for shared, rest in block["calls"]:
        if block["kind"] == "text":
            previous = previous.encode("utf-16-le")[: 2 * shared].decode("utf-16-le") + rest
        else:
            previous = previous[:shared] + rest
        prompts.append(previous)
    return prompts


@pytest.mark.parametrize("kind", ["text", "chat", "dfs", "chat-dfs"])
def test_every_call_of_an_invalid_answer_shows_the_prompt_it_was_sent(runs, kind):
    run_dir, backend = runs[kind]
    sent = sent_requests(backend)
    run = load_run(run_dir)
    assert run.queries and not any(q.valid for q in run.queries)  # only invalid answers
    checked = 0
    for query in run.queries:
        block = query.prompts
        assert block is not None and block["how"] == "recorded", query.query_id
        requests = sent[query.query_id]
        assert decoded_prompts(block) == [r.messages if kind.startswith("chat") else r.prompt for r in requests]
        assert block["stop"] == requests[0].stop and block["prefill"] == requests[0].extra["prefill"]
        assert block.get("tools") == requests[0].tools and "vary" not in block
        # every model call of the page points at its own prompt, in order
        assert [call.get("mc") for call in query.calls] == list(range(len(requests))), query.query_id
        checked += len(requests)
    assert checked == len(backend.requests) > len(run.queries)


def test_failed_judgements_are_counted_and_an_all_zero_figure_says_so(runs):
    failed, judgements = load_run(runs["judge-failed"]).failed_judgements()
    assert judgements == 12 and failed == 4  # two weather queries, two repeats each
    assert load_run(runs["text"][0]).failed_judgements() == (0, 12)
    zero = load_run(runs["text"][0])
    assert zero.score_rows and plots.pass_rate([zero]) is None
    assert plots.pass_rate_why([zero]) == "every group scores 0.0 (SoPR upstream): there is no bar to draw"


def test_the_score_cards_of_an_incomplete_evaluation_carry_the_tables_mark(runs):
    """Was: the tables' rows read "... †" with a footnote, the SoPR cards of the same evaluation bare numbers."""
    failed = load_run(runs["judge-failed"])
    assert not failed.evaluation.complete
    assert any(row[0].endswith(SCORED_ANYWAY) for board in failed.boards() for row in board.body())
    sopr = headline(failed)["sopr"]
    for mode in ("upstream", "strict"):
        assert sopr[mode]["mark"] == SCORED_ANYWAY, mode
        why = sopr[mode]["markWhy"]
        assert "failed judgements (no verdict) left out of every denominator" in why, why
        assert "the evaluation shown is not complete" in why and failed.evaluation.id in why, why
    complete = headline(load_run(runs["text"][0]))["sopr"]
    assert complete["upstream"]["mark"] == complete["strict"]["mark"] == "" and not complete["upstream"]["markWhy"]
    # the index of runs (tba report --index) says so beside the number
    assert f">{SCORED_ANYWAY}</span>" in run_index._score(headline(failed), "upstream")
    assert SCORED_ANYWAY not in run_index._score(headline(load_run(runs["text"][0])), "upstream")


EVERYTHING_OPEN = """(() => { const setup = document.getElementById("setup"); if (setup) setup.open = true;
  document.querySelectorAll("details").forEach(d => d.open = true); return document.body.innerText; })()"""


def test_the_page_of_invalid_answers_shows_every_prompt_in_chromium(chromium, runs, tmp_path):  # noqa: F811
    run_dir, backend = runs["text"]
    sent = sent_requests(backend)
    page = write_report([run_dir], tmp_path / "report.html")
    chrome = Chrome(chromium, tmp_path / "profile")
    try:
        chrome.open(page.as_uri())
        first = chrome.js("document.getElementById('first-screen').innerText")
        assert re.search(r"valid answers\s+0 / 6", first)
        assert_fits(chrome, "first screen")
        keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
        if keep:
            chrome.screenshot(Path(keep) / "invalid_answers_first_screen.png")
        text = chrome.js(EVERYTHING_OPEN)
        assert "[object Object]" not in text
        assert re.search(r"totals\.infra_failures_by_kind\s+none", text)
        assert "every group scores 0.0 (SoPR upstream): there is no bar to draw" in text
        statuses = chrome.js("[...document.querySelectorAll('tr.qrow td.kinds .badge')].map(b => b.innerText)")
        assert "1 no_such_function" in statuses and "1" not in statuses
        for query_id, requests in sent.items():
            group = next(p.parent.name for p in run_dir.glob(f"*/{query_id}_CoT@1.json"))
            chrome.open(page.as_uri() + f"#open={group}/{query_id}")
            chrome.js(EVERYTHING_OPEN)
            shown = chrome.js("""(() => { const t = document.querySelector(".trajectory");
              return {calls: t.querySelectorAll(".call").length, none: t.querySelectorAll(".prompt-none").length,
                      prompts: [...t.querySelectorAll("details.prompt pre.prompt-text")].map(p => p.textContent),
                      how: [...t.querySelectorAll("details.prompt > summary")].map(s => s.innerText)}; })()""")
            assert shown["none"] == 0 and shown["calls"] == len(requests), query_id
            # exactly what was sent, character for character (a character beyond the BMP included: 900003)
            assert shown["prompts"] == [r.prompt for r in requests], query_id
            assert all("recorded" in how for how in shown["how"])
            assert_fits(chrome, f"query {query_id} open with every fold open")
        keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
        if keep:
            chrome.open(page.as_uri() + "#open=G1_instruction/900001")
            chrome.js("document.querySelectorAll('details.prompt')[1].open = true")
            chrome.js("document.querySelectorAll('.call')[1].scrollIntoView()")
            chrome.screenshot(Path(keep) / "invalid_answers_prompt_of_a_call.png")
    finally:
        chrome.close()


def test_the_first_screen_warns_of_failed_judgements_in_chromium(chromium, runs, tmp_path):  # noqa: F811
    page = write_report([runs["judge-failed"]], tmp_path / "report.html")
    chrome = Chrome(chromium, tmp_path / "profile")
    try:
        chrome.open(page.as_uri())
        warning = chrome.js("(document.getElementById('judge-warning') || {}).innerText")
        assert warning and warning.startswith("Warning: 4 of 12 judgements failed (JudgeError")
        card = chrome.js("document.getElementById('card-judge-failures').innerText")
        assert re.search(r"failed judgements\s+4 / 12", card)
        # the SoPR cards carry the mark the tables' rows carry, with its footnote on the first screen
        for mode in ("upstream", "strict"):
            value = chrome.js(f"document.querySelector('#card-sopr-{mode} .card-value').innerText")
            assert value.endswith(" \u2020"), (mode, value)
        mark = chrome.js("(document.getElementById('sopr-mark') || {}).innerText")
        assert mark and mark.startswith("\u2020 SoPR: scored with 4 failed judgements"), mark
        box = chrome.js("(() => { const r = document.getElementById('judge-warning').getBoundingClientRect();"
                        " return [r.top, r.bottom, innerHeight]; })()")
        assert 0 <= box[0] and box[1] <= box[2]  # on the first screen
        assert "[object Object]" not in chrome.js(EVERYTHING_OPEN)
        keep = os.environ.get("TBA_REPORT_EXAMPLE_DIR")
        if keep:
            chrome.open(page.as_uri())
            chrome.screenshot(Path(keep) / "judge_failed_first_screen.png")
    finally:
        chrome.close()
