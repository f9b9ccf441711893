"""Issue 33.2 and 33.8: every evaluation stands against the StableToolBench leaderboard's setup in one line
(comparable: yes, as declared, or not comparable and why: issue 40), printed on every leaderboard, `tba table`,
the report headline and `tba reproduce --published`; every comparison keeps the judge, self-judged, that line and
the axis that differs; runs of different query sets are compared over their shared queries, the rest counted
(issue 35)."""

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
    AS_DECLARED,
    COMPARABLE,
    NOT_COMPARABLE,
    PROMPT_FILE,
    PROMPT_OWN,
    PROMPT_STAND_IN,
    verdict,
)
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.evaluation.stb_queries import classify_queries, digest_table, stb_digests
from toolbench_adapter.queryset.queries import QuerySet
from toolbench_adapter.report.headline import headline
from toolbench_adapter.report.run_data import load_run

STB = Path("data/stabletoolbench")
OPENAI = "https://api.openai.com/v1"
LEADERBOARD_JUDGE = {"model": "gpt-4-turbo-2024-04-09", "evaluate_times": 3, "self_judged": False,
                     "evaluator": "default", "endpoints": [OPENAI], "listed": True}


def assess(setup, judge) -> tuple[bool, list[str]]:
    """(comparable: yes, the failed conditions) of the one rule."""
    found = verdict(setup, judge)
    return found.comparable, found.reasons


def all_stb() -> dict:
    return {"root": str(STB), "stb": {g: [int(i) for i in ids] for g, ids in stb_digests().items()}, "other": {}}


OPENAI_SIMULATOR = {"simulator": "llm", "model": "gpt-4-turbo", "host": "api.openai.com", "listed": True,
                    "prompt": PROMPT_OWN}


def leaderboard_setup() -> dict:
    """Facts that meet every condition: a model, the 765 queries, documents for all 814 tools, the run's own
    server answering every call from the cache, its misses left to gpt-4-turbo listed by OpenAI's API host."""
    return {"agent": {"backend": "openai-chat", "model": "m"}, "queries": all_stb(),
            "tool_documents": {"tool_root": "toolenv/tools", "found": True, "tools": 814, "covered": 814,
                               "used": [], "missing": []},
            "tool_responses": {"server": "embedded", "simulator": "llm", "cache_dir": "cache", "requests": 100,
                               "hits": 100, "simulated_hits": 0, "misses": 0, "made_by": {},
                               "simulator_endpoints": [dict(OPENAI_SIMULATOR)]},
            "method": {"method": "CoT@1", "constrain": "off", "on_invalid": "observe"}}


def with_misses(made_by: dict, **endpoint) -> dict:
    """The leaderboard's setup with 3 of its 100 calls answered by a simulator (``made_by``), its endpoint changed."""
    setup = leaderboard_setup()
    setup["tool_responses"].update(hits=97, misses=3, made_by=made_by)
    setup["tool_responses"]["simulator_endpoints"][0].update(endpoint)
    setup["tool_responses"]["simulator"] = setup["tool_responses"]["simulator_endpoints"][0]["simulator"]
    return setup


# ---------------------------------------------------------------- the rule, reason by reason

def test_the_leaderboards_setup_is_comparable():
    assert assess(leaderboard_setup(), LEADERBOARD_JUDGE) == (True, [])
    found = verdict(leaderboard_setup(), LEADERBOARD_JUDGE)
    assert found.line == COMPARABLE
    [responses] = [c for c in found.conditions if c.name == "tool responses"]
    assert responses.figure == "100 of 100 from the cache; cache misses answered by gpt-4-turbo at api.openai.com"


GPT = "llm[gpt-4-turbo@api.openai.com]"


@pytest.mark.parametrize(("setup", "judge", "declared"), [
    # the leaderboard's model answered misses, but with this project's prompt: never upstream's answers
    (with_misses({GPT: 3}), LEADERBOARD_JUDGE,
     "tool responses: 97 of 100 from the cache; 3 of 100 made by gpt-4-turbo with this project's simulation prompt "
     "(upstream's prompt is not shipped)"),
    # the right name at a host of anyone's: no miss, but what would answer one is a name
    (with_misses({}, host="127.0.0.1"), LEADERBOARD_JUDGE,
     "cache misses answered by gpt-4-turbo at 127.0.0.1, not the provider's API host (api.openai.com): which "
     "weights answer cannot be checked here"),
    (with_misses({"llm[gpt-4-turbo@127.0.0.1]": 3}, host="127.0.0.1"), LEADERBOARD_JUDGE,
     "3 of 100 made by gpt-4-turbo at 127.0.0.1 with this project's simulation prompt (upstream's prompt is not "
     "shipped); 127.0.0.1 is not the provider's API host"),
    # MirrorAPI: a local vLLM whose name cannot prove its weights (judged by gpt-4o there)
    (with_misses({"mirrorapi[MirrorAPI-Cache@127.0.0.1]": 3}, simulator="mirrorapi", model="MirrorAPI-Cache",
                 host="127.0.0.1", prompt=PROMPT_FILE), {**LEADERBOARD_JUDGE, "model": "gpt-4o"},
     "3 of 100 made by MirrorAPI served as MirrorAPI-Cache at 127.0.0.1 (a name cannot prove which weights answer)"),
])
def test_simulated_answers_and_a_simulator_named_only_are_declared(setup, judge, declared):
    found = verdict(setup, judge)
    assert found.kind == "as declared" and not found.reasons, found.line
    assert found.line.startswith(AS_DECLARED + ": tool responses: ") and declared in found.line, found.line
    assert "None" not in found.line


def test_a_merged_run_keeps_every_shards_simulator():
    """tba merge: the endpoints of every shard are kept, and the worst decides (a shard that asked its simulator
    elsewhere is not hidden behind the first shard's)."""
    first, second = leaderboard_setup(), leaderboard_setup()
    second["tool_responses"]["simulator_endpoints"] = [{**OPENAI_SIMULATOR, "host": "10.0.0.7"}]
    merged = comparability.merge_setups([first, second])
    assert [e["host"] for e in merged["tool_responses"]["simulator_endpoints"]] == ["api.openai.com", "10.0.0.7"]
    [responses] = [c for c in verdict(merged, LEADERBOARD_JUDGE).conditions if c.name == "tool responses"]
    assert responses.state == "declared" and "cache misses answered by gpt-4-turbo at 10.0.0.7, not" in responses.text
    [same] = [c for c in verdict(comparability.merge_setups([first, first]), None).conditions
              if c.name == "tool responses"]
    assert same.state == "verified" and same.figure.startswith("200 of 200 from the cache")


def test_every_sessions_simulator_is_judged():
    """A rerun of the run whose simulator was asked at another host: the worst endpoint decides."""
    setup = leaderboard_setup()
    setup["tool_responses"]["simulator_endpoints"].append({**OPENAI_SIMULATOR, "host": "localhost"})
    found = verdict(setup, LEADERBOARD_JUDGE)
    assert found.kind == "as declared" and "cache misses answered by gpt-4-turbo at localhost, not" in found.line


def test_the_simulator_answering_misses_counts_even_without_a_miss():
    """Issue 40: zero misses no longer skips the simulator condition (every response "from the cache" of a run
    whose misses would be synthetic is still a schema-simulator setup)."""
    cached = leaderboard_setup()
    cached["tool_responses"].update(simulator="schema", hits=100, misses=0, made_by={})
    comparable, reasons = assess(cached, LEADERBOARD_JUDGE)
    assert not comparable and reasons == ["tool responses: cache misses answered by the schema simulator (synthetic)"]


def test_a_judge_named_like_the_leaderboards_at_another_host_is_declared():
    found = verdict(leaderboard_setup(), {**LEADERBOARD_JUDGE, "endpoints": ["http://127.0.0.1:8000/v1"]})
    assert found.kind == "as declared" and found.line.startswith(AS_DECLARED + ": ")
    assert found.declared == [found.line.removeprefix(AS_DECLARED + ": ")]
    assert ("judge: gpt-4-turbo-2024-04-09 listed by 127.0.0.1, 3 evaluations: 127.0.0.1 is not the provider's API "
            "host") in found.line


def test_an_external_tool_server_and_a_replay_are_declared():
    external = leaderboard_setup()
    external["tool_responses"]["server"] = "http://127.0.0.1:8080/virtual"
    found = verdict(external, LEADERBOARD_JUDGE)
    assert found.kind == "as declared" and not found.reasons
    assert "as counted by the tool server http://127.0.0.1:8080/virtual" in found.line
    replay = {**leaderboard_setup(), "agent": {"backend": "replay", "model": "replay:x/gpt4_cot",
                                                "replays": ["x/gpt4_cot"]}}
    found = verdict(replay, LEADERBOARD_JUDGE)
    assert found.kind == "as declared" and "agent: replayed recordings of gpt4_cot" in found.line


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
    (_changed("tool_documents.covered", 1) | {"tool_documents": {"tool_root": "t", "found": True, "tools": 814,
                                                                 "covered": 1, "missing": ["Data/a", "Data/b"]}},
     LEADERBOARD_JUDGE, "tool documents: 1 of 814 tools (missing: Data/a, Data/b)"),
    (_changed("tool_documents", {"tool_root": None, "found": False, "tools": 814, "covered": 0}),
     LEADERBOARD_JUDGE, "tool documents: 0 of 814 tools (no --tool-root given)"),
    (_changed("tool_responses.made_by", {"schema": 97, "llm": 3}), LEADERBOARD_JUDGE,
     "tool responses: 97 of 100 made by the schema simulator"),
    (_changed("tool_responses.simulator", "none"), LEADERBOARD_JUDGE,
     "tool responses: cache misses answered by no simulator"),
    (_changed("tool_responses.simulator", None), LEADERBOARD_JUDGE, "what answers cache misses is unknown"),
    (_changed("tool_responses.made_by", None), LEADERBOARD_JUDGE, "tool responses: not reported by the tool server"),
    # the simulator believed by name no more: the model it asked, whole, and whether its endpoint listed it
    (with_misses({}, model="SmolLM2-135M-Instruct"), LEADERBOARD_JUDGE, "tool responses: cache misses answered by "
     "SmolLM2-135M-Instruct (the llm simulator), not the leaderboard's gpt-4-turbo"),
    (with_misses({}, model="my-org/gpt-4-turbo"), LEADERBOARD_JUDGE,
     "cache misses answered by my-org/gpt-4-turbo (the llm simulator), not the leaderboard's gpt-4-turbo"),
    (with_misses({"llm[SmolLM2@127.0.0.1]": 3}), LEADERBOARD_JUDGE,
     "tool responses: 3 of 100 made by SmolLM2 (the llm simulator), not the leaderboard's gpt-4-turbo"),
    (with_misses({"llm": 3}), LEADERBOARD_JUDGE,
     "tool responses: 3 of 100 made by the llm simulator, its model not recorded"),
    (_changed("tool_responses.simulator_endpoints", []), LEADERBOARD_JUDGE,
     "tool responses: cache misses answered by the llm simulator, its model not recorded"),
    (with_misses({}, listed=None), LEADERBOARD_JUDGE,
     "tool responses: the simulator's model gpt-4-turbo is not in the model list of api.openai.com"),
    (with_misses({}, simulator="mirrorapi", model="mirror", prompt=PROMPT_STAND_IN), {**LEADERBOARD_JUDGE,
     "model": "gpt-4o"}, "cache misses answered by MirrorAPI (mirror) with a stand-in system prompt, not upstream's"),
    (_changed("agent.backend", "scripted"), LEADERBOARD_JUDGE, "agent: the scripted backend, not a model"),
    (_changed("agent", None), LEADERBOARD_JUDGE, "agent: not recorded"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "self_judged": True, "model": "SmolLM2"},
     "judge: SmolLM2 self-judged, not gpt-4-turbo-2024-04-09"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "model": "gpt-4o-mini"}, "judge: gpt-4o-mini, not gpt-4-turbo"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "model": "my-tiny-model/gpt-4-turbo-2024-04-09"},
     "judge: my-tiny-model/gpt-4-turbo-2024-04-09, not gpt-4-turbo-2024-04-09"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "model": "hf:/models/gpt-4-turbo-2024-04-09", "endpoints": []},
     "judge: hf:/models/gpt-4-turbo-2024-04-09, not gpt-4-turbo-2024-04-09"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "model": "GPT-4-Turbo-2024-04-09"},
     "judge: GPT-4-Turbo-2024-04-09, not gpt-4-turbo-2024-04-09"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "listed": None}, "is not in the model list of api.openai.com"),
    (leaderboard_setup(), {**LEADERBOARD_JUDGE, "endpoints": []}, "a model of this process"),
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
    assert verdict(setup, judge).line.startswith(NOT_COMPARABLE + ": ")
    assert not any("None" in r for r in reasons)  # issue 41: no Python None in a sentence
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
    assert facts["agent"] == {"backend": "scripted", "model": "scripted"}
    assert facts["tool_documents"]["tools"] == 7 and facts["tool_documents"]["covered"] == 0
    evaluate_run(run_dir, Judge("gpt-4o-mini"), evaluate_times=1, cache_path=None, progress=False)
    expected = ("agent: the scripted backend, not a model", "queries: data/sample (not StableToolBench's)",
                "tool documents: 0 of 7 tools (no --tool-root given; missing: ",
                "tool responses: 6 of 6 made by the schema simulator",
                "judge: gpt-4o-mini, not gpt-4-turbo-2024-04-09")
    boards = boards_of(run_dir)
    md_line = boards["md"].splitlines()[2]
    assert md_line.startswith(NOT_COMPARABLE + ": ") and all(reason in md_line for reason in expected), md_line
    row = next(csv.DictReader(io.StringIO(boards["csv"])))
    assert row["comparability"] == md_line
    assert "not comparable with the StableToolBench leaderboard: agent: the scripted backend" in boards["tex"]
    record = choose_evaluation(run_dir)[0].data
    assert record["comparability"]["comparable"] is False and len(record["comparability"]["reasons"]) == 5
    assert record["comparability"]["verdict"] == "not comparable" and record["comparability"]["line"] == md_line
    states = {c["condition"]: c["state"] for c in record["comparability"]["conditions"]}
    assert states == {"agent": "failed", "queries": "failed", "tool documents": "failed", "tool responses": "failed",
                      "judge": "failed", "method": "verified"}
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    assert md_line in capsys.readouterr().out.splitlines()
    assert headline(load_run(run_dir))["comparability"] == md_line


class ProviderJudge(Judge):
    """An in-process judge that says it is OpenAI's own API and lists its model (as a GET /models would)."""

    base_urls = ("https://api.openai.com/v1",)

    def served_models(self, url):
        return [self.model]


def test_an_evaluation_meeting_every_condition_says_comparable_yes(tmp_path, capsys):
    run_dir = sample_run(tmp_path)
    path = run_dir / "manifest.json"  # a synthetic run: its recorded facts are the leaderboard's setup
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "setup_facts": leaderboard_setup()}))
    evaluate_run(run_dir, ProviderJudge("gpt-4-turbo-2024-04-09"), evaluate_times=3, cache_path=None,
                 progress=False, preflight=True)
    assert choose_evaluation(run_dir)[0].data["judge"]["listed"] is True  # the preflight's evidence, recorded
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
    assert f"{NOT_COMPARABLE}: agent: the scripted backend" in line and "queries: data/sample" in line
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
        assert f"{NOT_COMPARABLE}: agent: the scripted backend" in text and "judge: scripted self-judged" in text
        assert "queries: data/sample" in text
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
    assert responses["made_by"] == {"schema": 6}  # /stats says who made the answers
    _, reasons = assess({"tool_responses": responses}, None)
    assert ("tool responses: 6 of 6 made by the schema simulator; cache misses answered by the schema simulator "
            "(synthetic)") in reasons
    unknown = {"server": ["http://127.0.0.1:9/virtual"], "simulator": None, "requests": None, "hits": None,
               "misses": None}
    assert any(r.startswith("tool responses: not reported by the tool server")
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
    # who made the answers, summed over the shards; the tool documents over every shard's tools (issue 40)
    assert merged["tool_responses"]["made_by"] == {"schema": sum(f["tool_responses"]["made_by"]["schema"]
                                                                 for f in facts)} != {"schema": 0}
    assert merged["tool_documents"]["tools"] == 7 > max(f["tool_documents"]["tools"] for f in facts)
    assert merged["agent"] == {"backend": "scripted", "model": "scripted"}


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
        assert text and text.startswith(f"{NOT_COMPARABLE}: agent: the scripted backend, not a model; queries: "
                                        "data/sample (not StableToolBench's)")
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
    assert facts["made_by"] == {"schema": replayed}
    assert f"tool responses: {replayed} of {replayed} made by the schema simulator" in md_line
