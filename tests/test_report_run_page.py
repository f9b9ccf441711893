"""The run page's first screen and per-step details, the comparison counts and the sweep index, on real
runs of the sample set (scripted model, embedded server) and on run folders edited the way newer runners
write them (outcomes per query, tool-call and model-call figures in steps.jsonl)."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models.scripted import ScriptedBackend
from tests.test_report_html import embedded, react_script
from toolbench_adapter.evaluation.evaluations import choose_evaluation
from toolbench_adapter.report.headline import headline
from toolbench_adapter.report.html import render_page
from toolbench_adapter.report.run_compare import MISSING, OUTCOME_DIFFERS, SAME, compare_runs, rank_of, summary
from toolbench_adapter.report.run_data import load_run
from toolbench_adapter.report.run_index import write_index

FUNCTION_NAME = re.compile(r"""["']name["']: ["']([^"']+)["']""")


def json_object_script(request):
    """json-object dialect: one call, then the answer."""
    if request.key["path"]:
        return json.dumps({"think": "done", "answer": "the answer"})
    name = FUNCTION_NAME.search(request.messages[0]["content"]).group(1)
    return json.dumps({"think": "look it up", "action": name, "arguments": {"query": "x"}})


def scripted_run(root: Path, name: str, dialect: str, parser: str, script) -> tuple[Path, ScriptedBackend]:
    backend = ScriptedBackend(script)
    cfg = RunConfig(name=name, out_root=str(root), backend="scripted", dialect=dialect, parser=parser,
                    method="CoT@1", max_step=6)
    Runner(cfg, backend=backend, progress=False).run()
    return root / name, backend


class ScriptedJudge:
    """An in-process judge client: Solved for the weather queries, Unsolved otherwise."""

    name = "scripted-judge"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None):
        status = "Solved" if "weather" in messages[0]["content"] else "Unsolved"
        arguments = json.dumps({"reason": f"scripted {status}", "answer_status": status})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    text, text_backend = scripted_run(root, "toolllama-run", "toolllama", "react-find", react_script)
    chat, chat_backend = scripted_run(root, "json-run", "json-object", "json-object", json_object_script)
    return {"text": (text, text_backend), "chat": (chat, chat_backend), "root": root}


def sent_prompts(backend: ScriptedBackend) -> dict[str, list]:
    by_query: dict[str, list] = {}
    for request in backend.requests:
        sent = request.prompt if request.prompt is not None else request.messages
        by_query.setdefault(str(request.key["query_id"]), []).append(sent)
    return by_query


def decoded_prompts(block: dict) -> list:
    """Every call's prompt from a page block: [prefix shared with the previous call's prompt (UTF-16 units, as
    the page's JavaScript counts), rest]."""
    prompts, previous = [], "" if block["kind"] == "text" else []
    for shared, rest in block["calls"]:
        if block["kind"] == "text":
            previous = previous.encode("utf-16-le")[: 2 * shared].decode("utf-16-le") + rest
        else:
            previous = previous[:shared] + rest
        prompts.append(previous)
    return prompts


def without_recorded_requests(source: Path, target: Path) -> Path:
    """A copy of a run as a runner that recorded no requests wrote it (the report then rebuilds prompts)."""
    shutil.copytree(source, target)
    for path in [target / "steps.jsonl", *(target / "steps").glob("*/*.jsonl")]:
        records = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "sent"}) + "\n" for r in records))
    return target


@pytest.mark.parametrize("kind", ["text", "chat"])
def test_reconstructed_prompts_are_the_ones_sent(runs, kind, tmp_path):
    run_dir, backend = runs[kind]
    sent = sent_prompts(backend)
    run = load_run(without_recorded_requests(run_dir, tmp_path / "older"))
    checked = 0
    for query in run.queries:
        block = query.prompts
        assert block is not None and block["how"] == "reconstructed", query.query_id
        assert block["kind"] == ("text" if kind == "text" else "messages")
        for number, rebuilt in enumerate(decoded_prompts(block)):
            assert rebuilt == sent[query.query_id][number], (query.query_id, number)
            checked += 1
        # each model call's nodes point at its prompt, and the calls are numbered in order
        assert [c.get("mc") for c in query.calls] == list(range(len(block["calls"])))
        assert all(node["k"] is not None for node in query.nodes)
    assert checked == sum(len(v) for v in sent.values()) == 12


def test_prompts_are_stored_once_per_query(runs):
    page = render_page([load_run(runs["text"][0])])
    detail = embedded(page, "d0_0")
    prompts = detail["prompts"]
    first, second = decoded_prompts(prompts)[:2]
    # the second call's prompt shares the first call's text: it is stored as a length, not again
    block = re.search(r'<script type="application/json" id="d0_0">(.*?)</script>', page, re.S).group(1)
    assert block.count(first[:200].replace("\n", "\\n")) == 1
    assert len(first) - 40 < prompts["calls"][1][0] <= len(first) and len(second) > len(first)


def with_outcomes(source: Path, target: Path) -> Path:
    """A copy of a run as the outcome-recording runner writes it: 900001 failed at the tool server (partial
    tree under failed/), 900003 failed at the model endpoint with no tree, the rest finished; tool and model
    call figures in steps.jsonl."""
    shutil.copytree(source, target)
    answer = target / "G1_instruction" / "900001_CoT@1.json"
    (target / "failed" / "G1_instruction").mkdir(parents=True)
    answer.rename(target / "failed" / "G1_instruction" / answer.name)
    (target / "G1_category" / "900003_CoT@1.json").unlink()
    lines = []
    for line in (target / "queries.jsonl").read_text().splitlines():
        record = json.loads(line)
        record.update(outcome="finished", failure_kind=None, failure_detail=None)
        if record["query_id"] == 900001:
            record.update(outcome="infra_failure", failure_kind="tool_server", failure_detail="status 12 after 3 tries")
        if record["query_id"] == 900003:
            record.update(outcome="infra_failure", failure_kind="model_endpoint", failure_detail="HTTP 503")
        lines.append(json.dumps(record))
    (target / "queries.jsonl").write_text("\n".join(lines) + "\n")
    steps = []
    for line in (target / "steps.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["query_id"] == 900004:
            record.update(prompt_tokens=700 + record["turn"], completion_tokens=20, model_latency_s=0.25,
                          finish_reason="stop")
            if record["call"] != "Finish":
                record.update(reply_kind="json", http_status=200, attempts=2, latency_s=0.031)
        steps.append(json.dumps(record))
    (target / "steps.jsonl").write_text("\n".join(steps) + "\n")
    return target


def test_outcomes_infra_failures_and_call_figures_are_read(runs, tmp_path):
    run = load_run(with_outcomes(runs["text"][0], tmp_path / "run"))
    by_id = {q.query_id: q for q in run.queries}
    assert len(by_id) == 6  # the failed queries stay in the table
    assert (by_id["900001"].outcome, by_id["900001"].failure_kind) == ("infra_failure", "tool_server")
    assert by_id["900001"].nodes and not by_id["900001"].valid  # its partial tree, never counted as an answer
    assert (by_id["900003"].outcome, by_id["900003"].failure_detail) == ("infra_failure", "HTTP 503")
    assert by_id["900003"].nodes == []
    assert by_id["900004"].outcome == "finished"
    top = headline(run)
    assert (top["queries"], top["finished"], top["infra"], top["valid"]) == (6, 4, 2, 4)
    assert top["infra_kinds"] == {"tool_server": 1, "model_endpoint": 1} and top["outcome_unknown"] == 0
    calls = by_id["900004"].calls
    assert [(c["turn"], c["pt"], c["ct"], c["ml"]) for c in calls] == [(1, 701, 20, 0.25), (2, 702, 20, 0.25)]
    tool_input = next(n for n in by_id["900004"].nodes if n["t"] == "I")
    assert {k: tool_input["rec"][k] for k in ("hs", "rk", "at", "tl")} == {"hs": 200, "rk": "json", "at": 2,
                                                                          "tl": 0.031}


def test_a_run_without_outcomes_reads_unknown(runs, tmp_path):
    """A run written before outcomes (and call figures) were recorded."""
    old = tmp_path / "old"
    shutil.copytree(runs["text"][0], old)
    fields = ("outcome", "failure_kind", "failure_detail")
    lines = [{k: v for k, v in json.loads(line).items() if k not in fields}
             for line in (old / "queries.jsonl").read_text().splitlines()]
    (old / "queries.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert any("pt" in call for q in load_run(old).queries for call in q.calls)  # today's runs record them
    model_fields = ("prompt_tokens", "completion_tokens", "model_latency_s", "finish_reason")
    steps = [{k: v for k, v in json.loads(line).items() if k not in model_fields}
             for line in (old / "steps.jsonl").read_text().splitlines()]
    (old / "steps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in steps))
    run = load_run(old)
    assert {q.outcome for q in run.queries} == {"unknown"}
    top = headline(run)
    assert top["outcome_unknown"] == 6 and top["infra"] == 0 and top["sopr"] == {}
    assert all("pt" not in call for q in run.queries for call in q.calls)  # not recorded: absent, not zero


def test_judged_run_headline_and_row_named_after_the_run(runs, tmp_path):
    run_dir = tmp_path / "judged"
    shutil.copytree(runs["text"][0], run_dir)
    evaluate_run(run_dir, ScriptedJudge(), evaluate_times=2, cache_path=None, progress=False)
    run = load_run(run_dir)
    assert [row[0] for board in run.boards() for row in board.body()] == ["toolllama-run (CoT@1)"] * 2
    top = headline(run)
    upstream = top["sopr"]["upstream"]
    assert upstream["N"] == 6 and upstream["n"] == 6 and upstream["text"] == "33.3±0.0"  # 2 weather queries
    strict = top["sopr"]["strict"]  # the sample set's test ids: the whole set, nothing missing
    assert (strict["n"], strict["N"], strict["missing"]) == (6, 6, 0)
    data = embedded(render_page([run]), "report-data")["runs"][0]
    assert data["headline"]["sopr"]["upstream"]["text"] == "33.3±0.0"
    assert data["facts"]["judge"] and data["facts"]["method"] == "CoT@1" and data["facts"]["dialect"] == "toolllama"


def test_missing_queries_are_counted_apart_and_unjudged_is_no_verdict(runs, tmp_path):
    full = load_run(runs["text"][0])
    partial_dir = tmp_path / "partial"
    shutil.copytree(runs["text"][0], partial_dir)
    for path in list((partial_dir / "G2_category").glob("*.json")) + list((partial_dir / "G3_instruction").glob("*.json")):
        path.unlink()
    rows = compare_runs([full, load_run(partial_dir)])
    counts = summary(rows)
    assert (counts["missing"], counts["outcome_differs"], counts["same"]) == (2, 0, 4)
    assert counts["missing_per_run"] == [0, 2] and [r.rank for r in rows][-2:] == [MISSING, MISSING]
    judged_dir = tmp_path / "judged"
    shutil.copytree(runs["text"][0], judged_dir)
    evaluate_run(judged_dir, ScriptedJudge(), evaluate_times=1, cache_path=None, progress=False)
    judged = {q.query_id: q for q in load_run(judged_dir).queries}
    unjudged = {q.query_id: q for q in full.queries}
    # one side unjudged: win and valid agree, so the outcomes agree (no "none" verdict to differ from)
    assert rank_of([judged["900001"], unjudged["900001"]]) == SAME
    relabelled = copy.copy(judged["900001"])
    relabelled.labels = ["Unsolved" if judged["900001"].label == "Solved" else "Solved"]
    assert rank_of([judged["900001"], relabelled]) == OUTCOME_DIFFERS  # both judged: the label counts
    data = embedded(render_page([full, load_run(judged_dir)]), "report-data")
    assert data["compare"]["summary"]["same"] == 6


def test_index_page_lists_every_run_with_its_headline_and_links(runs, tmp_path, capsys):
    root = tmp_path / "sweep"
    shutil.copytree(runs["root"], root)
    evaluate_run(root / "toolllama-run", ScriptedJudge(), evaluate_times=1, cache_path=None, progress=False)
    (root / "not-a-run").mkdir()
    assert main(["report", "--index", str(root)]) == 0
    index = root / "index.html"
    page = index.read_text()
    links = re.findall(r'<a href="([^"]+)">([^<]+)</a>', page)
    assert sorted(links) == [("json-run/report.html", "json-run"), ("toolllama-run/report.html", "toolllama-run")]
    for href, _name in links:
        assert (root / href).read_text().startswith("<!DOCTYPE html>")
    row = re.search(r"<tr class=\"run\"><td><a href=\"toolllama-run/report.html\">.*?</tr>", page).group(0)
    assert "33.3 <span" in row and "(6 of 6)" in row and "CoT@1" in row and "toolllama / react-find" in row
    json_row = re.search(r"<tr class=\"run\"><td><a href=\"json-run/report.html\">.*?</tr>", page).group(0)
    assert "unjudged" in json_row
    assert "written:" in capsys.readouterr().out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", "--index", str(empty)]) == 2
    assert "no run folder" in capsys.readouterr().err and not (empty / "index.html").exists()
    assert main(["report", str(root / "json-run"), "--index", str(root), "--out", str(tmp_path / "x.html")]) == 2
    # a single run page without --out is written into the run folder (issue 41: it said "nothing to report")
    assert main(["report", str(root / "json-run")]) == 0 and (root / "json-run" / "report.html").is_file()


def test_index_refuses_a_folder_whose_runs_are_all_unreadable(tmp_path, capsys):
    broken = tmp_path / "sweep" / "broken"
    broken.mkdir(parents=True)
    (broken / "manifest.json").write_text("{}")
    with pytest.raises(Exception, match="could be read"):
        write_index(tmp_path / "sweep")
    assert not (tmp_path / "sweep" / "index.html").exists()


def test_table_model_label_renames_the_row(runs, tmp_path, capsys):
    run_dir = tmp_path / "judged"
    shutil.copytree(runs["text"][0], run_dir)
    evaluate_run(run_dir, ScriptedJudge(), evaluate_times=1, cache_path=None, progress=False)
    scores = choose_evaluation(run_dir)[0].score_files()  # tba evaluate keeps each judge's evaluation apart
    assert scores
    assert main(["table", *map(str, scores), "--out", str(tmp_path / "t"), "--no-png",
                 "--model-label", "SmolLM2 sweep A"]) == 0
    out = capsys.readouterr().out
    assert "| SmolLM2 sweep A (CoT@1) |" in out and "toolllama-run" not in out
    assert main(["table", *map(str, scores), "--out", str(tmp_path / "t"), "--no-png",
                 "--model-label", "nobody=x"]) == 2
    assert "no model 'nobody'" in capsys.readouterr().err


def test_make_help_prints_values_not_variable_references(project_root):
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-s", "help", "PORT=9911"], cwd=project_root, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "$(" not in done.stdout
    serve = next(line for line in done.stdout.splitlines() if line.strip().startswith("serve "))
    assert "127.0.0.1:9911" in serve and "results/tool_response_cache" in serve
    assert re.search(r"^\s+BACKEND=hf$", done.stdout, re.M) and re.search(r"^\s+PORT=9911$", done.stdout, re.M)
