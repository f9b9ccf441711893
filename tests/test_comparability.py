"""Issue 33.2 and 33.8: every evaluation stands against the StableToolBench leaderboard's setup in one line
(comparable: yes, or not comparable and why), printed on every leaderboard, `tba table`, the report headline
and `tba reproduce --published`; every comparison keeps the judge, self-judged, that line and the axis that
differs; runs of different query sets are compared over their shared queries, the rest counted (issue 35)."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from tests.test_report_chromium import chromium  # noqa: F401 (a fixture)
from toolbench_adapter.evaluation import comparability
from toolbench_adapter.evaluation.comparability import (
    COMPARABLE,
    NOT_COMPARABLE,
    assess,
    classify_queries,
    digest_table,
    stb_digests,
)
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.report.headline import headline
from toolbench_adapter.report.run_data import load_run

STB = Path("data/stabletoolbench")
LEADERBOARD_JUDGE = {"model": "gpt-4-turbo-2024-04-09", "evaluate_times": 3, "self_judged": False,
                     "evaluator": "default"}


def all_stb() -> dict:
    return {"root": str(STB), "stb": {g: [int(i) for i in ids] for g, ids in stb_digests().items()}, "other": {}}


def leaderboard_setup() -> dict:
    """Facts that meet every condition: the 765 queries, tool documents, misses by a GPT-based simulator."""
    return {"queries": all_stb(), "tool_documents": {"tool_root": "toolenv/tools", "found": True},
            "tool_responses": {"server": "embedded", "simulator": "llm", "cache_dir": "cache", "requests": 100,
                               "hits": 97, "misses": 3},
            "method": {"method": "CoT@1", "constrain": "off", "on_invalid": "observe"}}


# ---------------------------------------------------------------- the rule, reason by reason

def test_the_leaderboards_setup_is_comparable():
    assert assess(leaderboard_setup(), LEADERBOARD_JUDGE) == (True, [])
    mirror = leaderboard_setup()
    mirror["tool_responses"]["simulator"] = "mirrorapi"  # the MirrorAPI table was judged by gpt-4o
    assert assess(mirror, {**LEADERBOARD_JUDGE, "model": "gpt-4o"}) == (True, [])
    cached = leaderboard_setup()  # every response from the cache: what would answer a miss does not matter
    cached["tool_responses"].update(simulator="schema", hits=100, misses=0)
    assert assess(cached, LEADERBOARD_JUDGE) == (True, [])


def _changed(path: str, value) -> dict:
    setup = leaderboard_setup()
    *parents, key = path.split(".")
    target = setup
    for part in parents:
        target = target[part]
    target[key] = value
    return setup


@pytest.mark.parametrize(("setup", "judge", "reason"), [
    (_changed("queries.stb", {}) | {"queries": {"root": "data/sample", "stb": {}, "other": {"G1_instruction": [1]}}},
     LEADERBOARD_JUDGE, "queries: data/sample (not StableToolBench's)"),
    (_changed("queries.stb", {"G1_instruction": [588, 608]}), LEADERBOARD_JUDGE,
     "queries: 2 of StableToolBench's 765 (G1_instruction 2 of 163)"),
    (_changed("queries.other", {"G1_instruction": [5]}), LEADERBOARD_JUDGE, "queries: 1 of 766 are not"),
    (_changed("tool_documents.found", False), LEADERBOARD_JUDGE, "tool documents: none"),
    (_changed("tool_responses.simulator", "schema"), LEADERBOARD_JUDGE,
     "tool responses: synthetic schema simulator (97 of 100 tool responses from the cache)"),
    (_changed("tool_responses.simulator", "none"), LEADERBOARD_JUDGE, "tool responses: no simulator"),
    (_changed("tool_responses.simulator", None), LEADERBOARD_JUDGE, "what answered cache misses is unknown"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "self_judged": True, "model": "SmolLM2"},
     "judge: SmolLM2 self-judged, not gpt-4-turbo-2024-04-09"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "model": "gpt-4o-mini"}, "judge: gpt-4o-mini, not gpt-4-turbo"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "evaluate_times": 1}, "judge: 1 evaluation, not 3"),
    (leaderboard_setup(), None, "judge: not evaluated"),
    (_changed("method.method", "CoT@3"), LEADERBOARD_JUDGE, "method: CoT@3 (the leaderboard's: CoT@1"),
    (_changed("method.constrain", "schema"), LEADERBOARD_JUDGE, "method: constrain schema (not upstream's)"),
    (None, LEADERBOARD_JUDGE, "queries: not recorded"),
])
def test_each_reason_alone_makes_the_setup_not_comparable(setup, judge, reason):
    comparable, reasons = assess(setup, judge)
    assert not comparable
    assert any(reason in r for r in reasons), reasons
    if setup is not None:
        assert len(reasons) == 1, reasons  # only what was changed


def test_the_shipped_digests_are_the_shipped_queries_and_recognise_all_a_subset_or_another_set(tmp_path):
    # the table in the library is what the documented recipe computes from data/stabletoolbench
    assert stb_digests() == digest_table(STB / "solvable_queries" / "test_instruction")
    assert sum(map(len, stb_digests().values())) == 765
    queries = list(QuerySet(STB).iter())
    assert assess({**leaderboard_setup(), "queries": classify_queries(queries, STB)}, LEADERBOARD_JUDGE)[0]
    subset = classify_queries(queries[:10], STB)
    assert sum(map(len, subset["stb"].values())) == 10 and not subset["other"]
    sample = classify_queries(list(QuerySet("data/sample").iter()), "data/sample")
    assert not sample["stb"] and sum(map(len, sample["other"].values())) == 6
    changed = copy.deepcopy(queries[0])  # the same group and id, another query text: not StableToolBench's
    changed.raw = {**changed.raw, "query": changed.raw["query"] + " please"}
    assert classify_queries([changed], STB)["other"] == {changed.group: [changed.query_id]}


# ---------------------------------------------------------------- on every leaderboard

class Judge:
    """An in-process judge in json mode: every answer Solved."""

    supports_tools = False
    judge_note = None

    def __init__(self, model: str):
        self.model = model
        self.name = f"{model} @ http://judge.invalid/v1"

    def chat(self, messages, **_):
        return {"role": "assistant", "content": '{"reason": "ok", "answer_status": "Solved"}'}


def sample_run(tmp_path: Path, name: str = "sample", backend=None, **config) -> Path:
    Runner(RunConfig(name=name, out_root=str(tmp_path), backend="scripted", **config), backend=backend,
           progress=False).run()
    return tmp_path / name


def boards_of(run_dir: Path) -> dict[str, str]:
    tables = choose_evaluation(run_dir)[0].tables_dir
    return {suffix: (tables / f"leaderboard_sopr_upstream.{suffix}").read_text() for suffix in ("md", "csv", "tex")}


def test_a_sample_run_says_not_comparable_and_why_everywhere(tmp_path, capsys):
    run_dir = sample_run(tmp_path)
    facts = json.loads((run_dir / "manifest.json").read_text())["setup_facts"]
    assert facts["tool_responses"]["simulator"] == "schema" and facts["tool_responses"]["requests"] > 0
    assert facts["tool_responses"]["misses"] == facts["tool_responses"]["requests"]  # no cache: all simulated
    evaluate_run(run_dir, Judge("gpt-4o-mini"), evaluate_times=1, cache_path=None, progress=False)
    expected = ("queries: data/sample (not StableToolBench's)", "tool documents: none",
                "tool responses: synthetic schema simulator", "judge: gpt-4o-mini, not gpt-4-turbo-2024-04-09")
    boards = boards_of(run_dir)
    md_line = boards["md"].splitlines()[2]
    assert md_line.startswith(NOT_COMPARABLE + ": ") and all(reason in md_line for reason in expected)
    row = next(csv.DictReader(io.StringIO(boards["csv"])))
    assert row["comparability"] == md_line
    assert "not comparable with the StableToolBench leaderboard: queries: data/sample" in boards["tex"]
    record = choose_evaluation(run_dir)[0].data
    assert record["comparability"]["comparable"] is False and len(record["comparability"]["reasons"]) == 4
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    assert md_line in capsys.readouterr().out.splitlines()
    assert headline(load_run(run_dir))["comparability"] == md_line


def test_an_evaluation_meeting_every_condition_says_comparable_yes(tmp_path, capsys):
    run_dir = sample_run(tmp_path)
    path = run_dir / "manifest.json"  # a synthetic run: its recorded facts are the leaderboard's setup
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "setup_facts": leaderboard_setup()}))
    evaluate_run(run_dir, Judge("gpt-4-turbo-2024-04-09"), evaluate_times=3, cache_path=None, progress=False)
    boards = boards_of(run_dir)
    assert boards["md"].splitlines()[2] == COMPARABLE == "comparable with the StableToolBench leaderboard: yes"
    assert next(csv.DictReader(io.StringIO(boards["csv"])))["comparability"] == COMPARABLE
    assert COMPARABLE in boards["tex"]
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    assert COMPARABLE in capsys.readouterr().out.splitlines()
    assert headline(load_run(run_dir))["comparability"] == COMPARABLE


def test_score_files_say_their_setup_is_not_recorded(tmp_path):
    from toolbench_adapter.evaluation.scoring.results import ScoreRow
    from toolbench_adapter.evaluation.scoring.scores import Score
    from toolbench_adapter.report.tables import build_leaderboards, to_markdown

    board = build_leaderboards([ScoreRow("m", "G1_instruction", Score("SoPR", "upstream", 50.0, n=4))])[0]
    assert to_markdown(board).splitlines()[2] == comparability.NOT_RECORDED


def test_reproduce_published_puts_a_runs_row_beside_the_published_ones_with_its_line(tmp_path, capsys):
    run_dir = sample_run(tmp_path)
    evaluate_run(run_dir, Judge("gpt-4o-mini"), evaluate_times=1, cache_path=None, progress=False)
    assert main(["reproduce", "--labels", str(run_dir), "--published", "stb",
                 "--match", "GPT-3.5-Turbo-0613 (CoT)=sample"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith(str(run_dir)))
    assert f"{NOT_COMPARABLE}: queries: data/sample" in line
    assert out.index(line) < out.index("Published beside reproduced")


# ---------------------------------------------------------------- comparisons keep every mark

class SelfJudge(Judge):
    """The run's own model judging it (tba evaluate --judge-self)."""


def judged(tmp_path: Path, name: str, on_invalid: str, backend=None, **config) -> Path:
    run_dir = sample_run(tmp_path, name, backend, on_invalid=on_invalid, **config)
    model = json.loads((run_dir / "manifest.json").read_text())["model"]
    evaluate_run(run_dir, SelfJudge(model), evaluate_times=1, cache_path=None, progress=False, judge_self=True)
    return run_dir


def test_compare_runs_keeps_self_judged_comparability_and_names_the_axis(tmp_path, capsys):
    observe, reask = judged(tmp_path, "observe", "observe"), judged(tmp_path, "reask", "reask:2")
    out = tmp_path / "cmp"
    assert main(["compare-runs", "--runs", str(observe), str(reask), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    for text in (stdout, (out / "runs.md").read_text(), (out / "summary.md").read_text()):
        assert "judged by: scripted @ http://judge.invalid/v1" in text and "self-judged" in text
        assert f"{NOT_COMPARABLE}: queries: data/sample" in text and "judge: scripted self-judged" in text
        assert "the runs differ in: on-invalid" in text
    assert stdout.splitlines()[0].split()[0] == "on-invalid"  # the table's first column: the axis, not "parser"
    parser_column = next(line for line in stdout.splitlines() if line.startswith("model "))
    assert "on-invalid" in parser_column and " parser " not in parser_column
    for name in ("runs.csv", "pass_rates.csv"):
        rows = list(csv.DictReader((out / name).open()))
        assert "on-invalid" in rows[0] and "parser" not in rows[0]
        assert all(r["self_judged"] == "True" and r["comparability"].startswith(NOT_COMPARABLE) for r in rows)


def test_the_reports_compare_tab_names_the_judge_and_the_axis(tmp_path):
    import re

    from toolbench_adapter.report.html import write_report

    observe, reask = judged(tmp_path, "observe", "observe"), judged(tmp_path, "reask", "reask:2")
    page = write_report([observe, reask], tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', page, re.S).group(1))
    assert data["compare"]["axes"] == ["on-invalid"]
    assert "self-judged" in data["compare"]["judges"] and data["compare"]["judges"].startswith("judged by: ")
    assert all(run["headline"]["comparability"].startswith(NOT_COMPARABLE) for run in data["runs"])
    from toolbench_adapter.report.run_index import write_index

    index = write_index(tmp_path)[0].read_text()  # the sweep's front page: a column per run
    assert "<th>StableToolBench leaderboard</th>" in index and index.count("not comparable <span") == 2


def test_compare_runs_on_different_query_sets_counts_over_the_shared_ones(tmp_path, capsys):
    whole = judged(tmp_path, "observe", "observe")  # the six sample queries
    one = judged(tmp_path, "reask", "reask:2", groups=["G1_instruction"])  # one of them
    out = tmp_path / "cmp"
    assert main(["compare-runs", "--runs", str(whole), str(one), "--out", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert ("compared on the 1 query every run has (judged); left out, not in every run: "
            "on-invalid=observe 5, on-invalid=reask:2 0") in stdout
    rows = {r["on-invalid"]: r for r in csv.DictReader((out / "runs.csv").open())}
    # every figure of a row is over the shared query: never six queries' counts beside one query's pass rate
    assert rows["on-invalid=observe"]["queries"] == "1" and rows["on-invalid=observe"]["left_out"] == "5"
    assert rows["on-invalid=reask:2"]["queries"] == "1" and rows["on-invalid=reask:2"]["left_out"] == "0"
    table = next(line for line in stdout.splitlines() if line.startswith("on-invalid=observe"))
    assert "/1 " in table and "/6" not in table


def test_an_external_tool_server_reports_its_hits_and_what_answers_misses(tmp_path):
    """--server URL: the hits of the session (its /stats read before and after: it may have served others) and
    the simulator its /health names; a server with neither (upstream's) leaves them unknown, said as such."""
    from toolbench_adapter.server.app import ServerConfig, build_virtual_server, create_app
    from toolbench_adapter.server.runner import EmbeddedServer

    server = build_virtual_server(ServerConfig(stb_root="data/sample", simulator="schema", save=False))
    server.stats.record("cache", 0.0)  # a request of someone else, before this run
    with EmbeddedServer(create_app(server)) as running:
        run_dir = sample_run(tmp_path, "external", server=running.url)
    responses = json.loads((run_dir / "manifest.json").read_text())["setup_facts"]["tool_responses"]
    assert responses["simulator"] == "schema" and responses["server"] == running.url
    assert responses["requests"] == responses["misses"] == 6 and responses["hits"] == 0
    _, reasons = assess({"tool_responses": responses}, None)
    assert "tool responses: synthetic schema simulator (0 of 6 tool responses from the cache)" in reasons
    unknown = {"server": ["http://127.0.0.1:9/virtual"], "simulator": None, "requests": None, "hits": None,
               "misses": None}
    assert any("what answered cache misses is unknown" in r and "cache hits not reported" in r
               for r in assess({"tool_responses": unknown}, None)[1])


def test_a_run_merged_from_shards_records_every_shards_queries_and_counts(tmp_path):
    from runners.execution.merge import merge_runs

    shards = [sample_run(tmp_path, f"s{i}", shard=f"{i}/2") for i in (1, 2)]
    facts = [json.loads((s / "manifest.json").read_text())["setup_facts"] for s in shards]
    assert [sum(map(len, f["queries"]["other"].values())) for f in facts] == [3, 3]
    merge_runs(shards, tmp_path / "merged")
    merged = json.loads((tmp_path / "merged" / "manifest.json").read_text())["setup_facts"]
    assert sum(map(len, merged["queries"]["other"].values())) == 6
    assert merged["tool_responses"]["requests"] == sum(f["tool_responses"]["requests"] for f in facts)


def test_the_first_screen_says_not_comparable_and_why_in_chromium(chromium, tmp_path):  # noqa: F811
    from tests.test_report_chromium import Chrome
    from toolbench_adapter.report.html import write_report

    run_dir = sample_run(tmp_path)
    evaluate_run(run_dir, Judge("gpt-4o-mini"), evaluate_times=1, cache_path=None, progress=False)
    page = write_report([run_dir], tmp_path / "report.html")
    chrome = Chrome(chromium, tmp_path / "profile")
    try:
        chrome.open(page.as_uri())
        text = chrome.js("(document.getElementById('comparability') || {}).innerText")
        assert text and text.startswith(f"{NOT_COMPARABLE}: queries: data/sample (not StableToolBench's)")
        box = chrome.js("(() => { const r = document.getElementById('comparability').getBoundingClientRect();"
                        " return [r.top, r.bottom, innerHeight]; })()")
        assert 0 <= box[0] and box[1] <= box[2]  # on the first screen
    finally:
        chrome.close()


def test_runs_that_differ_in_parser_and_more_are_named_by_both(tmp_path, capsys):
    """A parser comparison whose runs also differ in --on-invalid names both axes, not the parser alone."""
    from runners.models.scripted import ScriptedBackend

    finish = 'Thought: done.\nAction: Finish\nAction Input: {"return_type": "give_answer", "final_answer": "x"}'
    text = {"dialect": "toolllama", "max_step": 4}
    plain = judged(tmp_path, "plain", "observe", ScriptedBackend(script=lambda r: finish), parser="react-find", **text)
    other = judged(tmp_path, "other", "reask:2", ScriptedBackend(script=lambda r: finish), parser="react-robust",
                   **text)
    assert main(["compare-runs", "--runs", str(plain), str(other), "--out", str(tmp_path / "cmp")]) == 0
    stdout = capsys.readouterr().out
    assert "the runs differ in: parser, on-invalid" in stdout
    assert stdout.splitlines()[0].split()[:3] == ["parser", "/", "on-invalid"]
    assert any(line.startswith("react-robust on-invalid=reask:2") for line in stdout.splitlines())


def test_hits_on_answers_the_simulator_made_earlier_count_as_simulated(tmp_path):
    """A cache the schema simulator filled in an earlier run answers a second run from "the cache": those hits
    are simulated answers replayed, so the second run is never comparable on tool responses."""
    cache = tmp_path / "cache"
    sample_run(tmp_path, name="first", cache_dir=str(cache))
    run_dir = sample_run(tmp_path, name="second", cache_dir=str(cache))
    facts = json.loads((run_dir / "manifest.json").read_text())["setup_facts"]["tool_responses"]
    assert facts["misses"] == 0 and facts["hits"] == facts["simulated_hits"] == facts["requests"] > 0
    evaluate_run(run_dir, Judge("gpt-4o-mini"), evaluate_times=1, cache_path=None, progress=False)
    md_line = boards_of(run_dir)["md"].splitlines()[2]
    replayed = facts["simulated_hits"]
    assert (f"tool responses: synthetic schema simulator (0 of {replayed} tool responses from the cache; {replayed} "
            "more replayed the simulator's earlier answers)") in md_line
