"""Issue 40: the comparability verdict reads evidence, not names. Its five cases, each on loopback:

1. the scripted backend, an empty tool folder and a cache made of the schema simulator's copied answers, judged
   by an endpoint serving a model named like the leaderboard's judge: "not comparable", naming the agent, the
   tool documents (n of N) and the synthetic responses (recognised by content, wherever they sit);
2. the same with a judge named ``my-tiny-model/gpt-4-turbo-2024-04-09``: not the leaderboard's judge (the id is
   compared whole);
3. `tba doctor` with tool documents for 1 of the 814 tools the 765 queries use, a cache of synthetic answers and
   local endpoints: exit 1, neither tool documents nor the cache OK, the judge DECLARED;
4. a run resumed after Ctrl-C records the tool requests of every session (the uninterrupted run's count);
5. a forged judge card (a set that does not exist, 765 answers, kappa 0.99; or another judge's card under this
   judge's file name) is never cited.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend
from tests.openai_standin import OpenAIStandin
from tests.test_doctor import ENV as DOCTOR_ENV
from tests.test_doctor import doctor
from tests.test_interrupt import interrupting_at
from tests.test_judge_audit_known import judge_replying
from toolbench_adapter.evaluation.comparability import COMPARABLE, NOT_COMPARABLE
from toolbench_adapter.evaluation.labels import Label
from toolbench_adapter.protocol.leaderboard import GPT_CACHE_JUDGE, SIMULATOR_MODEL

STB = "data/stabletoolbench"
PREFIXED_JUDGE = f"my-tiny-model/{GPT_CACHE_JUDGE}"
SOLVED = judge_replying(lambda _q: Label.SOLVED)


def copy_answers(simulated: Path, target: Path) -> int:
    """The schema simulator's answers copied into a folder of their own as plain cache entries (upstream's
    ``{"error", "response"}`` only, nothing else of what this project stored): how a copied cache looks."""
    count = 0
    for path in sorted(simulated.rglob("*.json")):
        entries = json.loads(path.read_text())
        out = target / path.relative_to(simulated)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({k: {"error": v["error"], "response": v["response"]} for k, v in entries.items()}))
        count += len(entries)
    return count


@pytest.fixture(scope="module")
def synthetic_run(tmp_path_factory) -> Path:
    """Case 1's run: scripted backend, StableToolBench queries, an empty --tool-root, a --cache-dir of copied
    synthetic answers (every call a cache hit on one of them)."""
    root = tmp_path_factory.mktemp("case1")
    (root / "empty_tools").mkdir()
    common = ["--out-root", str(root / "runs"), "--backend", "scripted", "--stb-root", STB, "--groups",
              "G1_instruction", "--limit", "3", "--quiet"]
    assert main(["run", "--name", "seed", *common, "--cache-dir", str(root / "seed_cache")]) == 0
    assert copy_answers(root / "seed_cache" / "_simulated", root / "copied") >= 3
    assert main(["run", "--name", "scripted", *common, "--tool-root", str(root / "empty_tools"),
                 "--cache-dir", str(root / "copied")]) == 0
    return root / "runs" / "scripted"


def facts_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())["setup_facts"]


def evaluate_and_table(run_dir: Path, judge_model: str, capsys, tmp_path: Path) -> str:
    with OpenAIStandin(models=(judge_model,), respond=SOLVED) as judge:
        code = main(["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", judge_model,
                     "--evaluate-times", "3", "--cache", str(tmp_path / "judge.jsonl"), "--quiet"])
        assert code == 0, capsys.readouterr()
    evaluated = capsys.readouterr().out
    records = json.loads((run_dir / "evaluations.json").read_text())["evaluations"]
    judge_id = next(r["id"] for r in records if r["judge"].startswith(judge_model))
    assert main(["table", str(run_dir), "--judge-id", judge_id, "--out", str(tmp_path / "t"), "--no-png"]) == 0
    return evaluated + capsys.readouterr().out


def verdict_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "with the StableToolBench leaderboard" in line]


def test_case_1_scripted_agent_no_tool_documents_and_copied_synthetic_answers_are_not_comparable(
        synthetic_run, capsys, tmp_path):
    responses = facts_of(synthetic_run)["tool_responses"]
    # by folder it looks like the leaderboard's cache: every call a hit, no miss, nothing in _simulated/
    assert responses["misses"] == 0 and responses["hits"] == responses["requests"] >= 3
    out = evaluate_and_table(synthetic_run, GPT_CACHE_JUDGE, capsys, tmp_path)
    lines = verdict_lines(out)
    assert lines and COMPARABLE not in out, lines
    n = responses["requests"]
    for line in lines:
        assert line.startswith(NOT_COMPARABLE + ": "), line
        assert "agent: the scripted backend, not a model" in line
        assert re.search(r"tool documents: 0 of \d+ tools", line), line
        assert f"tool responses: {n} of {n} made by the schema simulator" in line
        assert "None" not in line  # issue 41: no Python None in a sentence
    # by content the responses are the schema simulator's, recorded so
    assert facts_of(synthetic_run)["tool_responses"]["made_by"] == {"schema": n}


def test_case_2_a_judge_id_with_a_prefix_is_not_the_leaderboards_judge(synthetic_run, capsys, tmp_path):
    out = evaluate_and_table(synthetic_run, PREFIXED_JUDGE, capsys, tmp_path)
    lines = verdict_lines(out)
    assert lines and COMPARABLE not in out
    for line in lines:
        assert line.startswith(NOT_COMPARABLE + ": ")
        assert f"judge: {PREFIXED_JUDGE}, not {GPT_CACHE_JUDGE}" in line, line
        assert "agent: the scripted backend" in line and "made by the schema simulator" in line


# ---------------------------------------------------------------- case 3: tba doctor

@pytest.fixture
def bare_environment(monkeypatch):
    for name in DOCTOR_ENV:
        monkeypatch.delenv(name, raising=False)


def synthetic_cache(root: Path, apis: int = 40) -> int:
    """A cache in upstream's layout whose every entry is the schema simulator's answer (two calls per API of
    StableToolBench's queries), written as plain entries: no mark, no _simulated/ mirror."""
    from toolbench_adapter.server.catalog import ApiCatalog
    from toolbench_adapter.server.simulators import SimulationRequest
    from toolbench_adapter.server.simulators.schema import SchemaSimulator

    catalog = ApiCatalog()
    catalog.add_query_files(STB)
    count = 0
    for key, doc in list(catalog.apis.items())[:apis]:
        entries = {}
        for tool_input in ({}, {"query": "x"}):
            answer = SchemaSimulator().simulate(SimulationRequest(key, tool_input, str(tool_input), doc)).answer
            entries[str(tool_input)] = answer
        path = root / key.relative_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries))
        count += len(entries)
    return count


def one_tool_document(root: Path) -> Path:
    (root / "Data").mkdir(parents=True)
    (root / "Data" / "theclique.json").write_text(json.dumps({"tool_name": "TheClique", "tool_description": "x",
                                                              "api_list": []}))
    return root


def test_case_3_doctor_counts_coverage_and_synthetic_entries_and_declares_a_local_judge(
        bare_environment, capsys, tmp_path):
    tools = one_tool_document(tmp_path / "tools")
    entries = synthetic_cache(tmp_path / "cache")
    with OpenAIStandin(models=(GPT_CACHE_JUDGE, SIMULATOR_MODEL)) as endpoint:
        code, lines, out = doctor(capsys, "--tool-root", str(tools), "--cache", str(tmp_path / "cache"),
                                  "--simulator", "llm", "--llm-base-url", endpoint.url, "--llm-model",
                                  SIMULATOR_MODEL, "--judge-url", endpoint.url, "--judge-model", GPT_CACHE_JUDGE)
    assert code == 1, out
    assert "all 5 pieces are there" not in out
    docs = lines["tool documents"]
    assert docs.startswith("MISSING") and "1 of 814 tools" in docs, docs
    assert re.search(r"missing: \w", docs), docs  # the first few missing tools by name
    cache = lines["response cache"]
    assert cache.startswith("MISSING") and f"{entries} of {entries} entries are this project's synthetic" in cache
    assert lines["judge"].startswith("DECLARED"), lines["judge"]


# ---------------------------------------------------------------- case 4: a resumed run

def test_case_4_a_run_resumed_after_ctrl_c_records_every_sessions_tool_requests(tmp_path):
    interrupting, _ = interrupting_at(3)  # two queries have ended: Ctrl-C while the third is in flight (it finishes)

    def config(name: str) -> RunConfig:
        return RunConfig(name=name, out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                         concurrency=1)

    Runner(config("whole"), backend=ScriptedBackend(script=react_script), progress=False).run()
    whole = facts_of(tmp_path / "whole")["tool_responses"]
    with pytest.raises(KeyboardInterrupt):
        Runner(config("resumed"), backend=ScriptedBackend(script=interrupting), progress=False).run()
    first = facts_of(tmp_path / "resumed")["tool_responses"]
    assert first["requests"] > 0, first  # the interrupted session's own calls are kept
    Runner(config("resumed"), backend=ScriptedBackend(script=react_script), progress=False).run()
    resumed = facts_of(tmp_path / "resumed")["tool_responses"]
    assert whole["requests"] > first["requests"]
    assert resumed["requests"] == whole["requests"], (resumed, whole)
    assert resumed["made_by"] == whole["made_by"] and sum(whole["made_by"].values()) > 0  # who made them, too


# ---------------------------------------------------------------- case 5: forged judge cards

def audited_card(capsys, judge: OpenAIStandin) -> tuple[Path, str]:
    code = main(["judge-audit", "--set", "stb-example", "--judge-url", judge.url, "--judge-model", judge.model,
                 "--no-cache", "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0, out
    path = Path(next(line for line in out.splitlines() if line.startswith("judge card: ")).removeprefix("judge card: "))
    return path, next(line for line in out.splitlines() if line.startswith("cite as: ")).removeprefix("cite as: ")


def test_case_5_a_forged_card_is_never_cited(capsys, tmp_path):
    from toolbench_adapter.evaluation.audit.cards import citation

    with OpenAIStandin(respond=SOLVED, models=("standin-model", "other-judge")) as judge:
        path, cited = audited_card(capsys, judge)
    card = json.loads(path.read_text())
    judge_id = card["judge"]["id"]
    assert citation(card["judge"]) == cited and "(set stb-example)" in cited
    forged = json.loads(path.read_text())
    forged["audits"][-1].update({"set": "stb-full-765", "answers": 765, "kappa": 0.99, "kappa_interval": [0.98, 1.0]})
    path.write_text(json.dumps(forged))
    line = citation(card["judge"])
    assert "kappa 0.99" not in line and "765 answers" not in line, line
    assert line.startswith("judge card unreadable: ") and "stb-full-765" in line
    assert line.endswith("again") and "`tba judge-audit --set stb-example" in line
    # another judge's card under this judge's file name
    other = json.loads(json.dumps(card))
    other["judge"] = {**card["judge"], "id": "other-judge@127.0.0.1_1-tools-x3", "model": "other-judge"}
    path.write_text(json.dumps(other))
    line = citation(card["judge"])
    assert line.startswith("judge card unreadable: ") and "other-judge" in line and "kappa" not in line, line
    assert judge_id in line


def test_case_5_a_forged_card_is_not_cited_by_tba_table(capsys, tmp_path):
    run_dir = tmp_path / "r"
    Runner(RunConfig(name="r", out_root=str(tmp_path), backend="scripted"), progress=False).run()
    with OpenAIStandin(respond=SOLVED) as judge:
        path, cited = audited_card(capsys, judge)
        assert main(["evaluate", str(run_dir), "--judge-url", judge.url, "--judge-model", judge.model,
                     "--evaluate-times", "3", "--cache", str(tmp_path / "j.jsonl"), "--quiet"]) == 0
    capsys.readouterr()
    forged = json.loads(path.read_text())
    forged["audits"][-1].update({"set": "no-such-set", "answers": 765, "kappa": 0.99})
    path.write_text(json.dumps(forged))
    assert main(["table", str(run_dir), "--out", str(tmp_path / "t"), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert "kappa 0.99" not in out and "judge card unreadable: " in out
    shutil.rmtree(tmp_path / "t")


# ---------------------------------------------------------------- issue 41: said before the first query

def test_a_run_says_what_makes_it_not_comparable_before_its_first_query_and_goes_on(tmp_path, capfd):
    """A new user's 765-query run with missing tool documents started without a word (5 h 53 min on the bar):
    before its first model call the run names the coverage shortfall (n of N, the first missing tools) and the
    rest that is not the leaderboard's, in one line, and runs."""
    (tmp_path / "tools").mkdir()
    before_first_call: list[str] = []

    def first_call(request):
        if not before_first_call:
            before_first_call.append(capfd.readouterr().err)
        return react_script(request)

    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama", stb_root=STB,
                    groups=["G1_instruction"], limit=3, tool_root=str(tmp_path / "tools"), concurrency=1)
    Runner(cfg, backend=ScriptedBackend(script=first_call), progress=False).run()
    [said] = before_first_call
    [line] = [text for text in said.splitlines() if text.startswith("tba run: ")]
    assert line.startswith(f"tba run: {NOT_COMPARABLE} (before the judge): agent: the scripted backend")
    assert re.search(r"tool documents: 0 of (\d+) tools \(missing: Data/\w+", line), line
    assert "tool responses: cache misses answered by the schema simulator" in line and "`tba doctor`" in line
    assert "judge" not in line.split("(before the judge)")[1]  # the judge is tba evaluate's to check
    assert len(list((tmp_path / "r").glob("G1_instruction/*.json"))) == 3  # and the run went on


def test_case_1_at_the_issues_scale_names_each_figure():
    """The issue's figures, from the measured facts of a 765-query scripted run with an empty tool folder whose every
    response was the schema simulator's (the run itself: tests above on 3 queries; the report states the full run)."""
    from toolbench_adapter.evaluation.comparability import verdict
    from toolbench_adapter.evaluation.stb_queries import classify_queries
    from toolbench_adapter.queryset.queries import QuerySet
    from toolbench_adapter.queryset.tool_coverage import tool_coverage

    queries = list(QuerySet(STB).iter())
    setup = {"agent": {"backend": "scripted", "model": "scripted"}, "queries": classify_queries(queries, STB),
             "tool_documents": tool_coverage(queries, "/nonexistent/empty").as_facts(),
             "tool_responses": {"server": "embedded", "simulator": "schema", "requests": 765, "hits": 765,
                                "simulated_hits": 765, "misses": 0, "made_by": {"schema": 765}},
             "method": {"method": "CoT@1", "constrain": "off", "on_invalid": "observe"}}
    judge = {"model": GPT_CACHE_JUDGE, "endpoints": ["http://127.0.0.1:8000/v1"], "listed": True,
             "evaluate_times": 3, "evaluator": "default", "self_judged": False}
    found = verdict(setup, judge)
    assert found.reasons == ["agent: the scripted backend, not a model",
                             "tool documents: 0 of 814 tools (no folder /nonexistent/empty; missing: "
                             "Advertising/asdfadsf, Advertising/get_20211230_testing_upload_swagger, Advertising/lets, "
                             "Advertising/petstoreratelimit, Advertising/reqres_dont_change and 809 more)",
                             "tool responses: 765 of 765 made by the schema simulator; cache misses answered by the "
                             "schema simulator (synthetic)"]
    assert found.declared[0].startswith("judge: gpt-4-turbo-2024-04-09 listed by 127.0.0.1")


def test_case_4_a_resumed_run_keeps_the_tool_documents_missing_when_its_earlier_answers_were_written(tmp_path):
    """Coverage is the worst over the sessions: documents added before a resume do not cover the answers the first
    session wrote without them."""
    from runners.execution.setup_facts import coverage_of

    tools = tmp_path / "tools"
    tools.mkdir()
    interrupting, _ = interrupting_at(2)

    cfg = RunConfig(name="later-documents", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                    concurrency=1, tool_root=str(tools))
    with pytest.raises(KeyboardInterrupt):
        Runner(cfg, backend=ScriptedBackend(script=interrupting), progress=False).run()
    first = facts_of(tmp_path / "later-documents")["tool_documents"]
    assert first["tools"] > 0 and first["covered"] == 0, first
    for name in coverage_of(cfg).used:  # every document the queries need, written before the resume
        category, _, tool = name.partition("/")
        (tools / category).mkdir(exist_ok=True)
        (tools / category / f"{tool}.json").write_text(json.dumps({"tool_name": tool, "tool_description": "x",
                                                                   "api_list": []}))
    assert coverage_of(cfg).complete
    Runner(cfg, backend=ScriptedBackend(script=react_script), progress=False).run()
    resumed = facts_of(tmp_path / "later-documents")["tool_documents"]
    assert resumed["tools"] == first["tools"] and resumed["covered"] == 0, resumed
    assert resumed["missing"] == first["missing"] and resumed["missing_earlier"] == first["tools"]
    from toolbench_adapter.evaluation.comparability import _tool_documents

    said = _tool_documents(resumed).figure
    assert said.startswith(f"0 of {first['tools']} tools (") and "documented only after an earlier session" in said
