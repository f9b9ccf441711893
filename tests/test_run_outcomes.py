"""Loud runs (issue 12): every query ends finished or as a named infrastructure failure; a failed query
writes no answer file and is redone by rerunning the same command; misfits and bad methods are refused."""

import json
import re
import socket

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.progress import progress_postfix
from runners.execution.query import QueryOutcome
from runners.execution.runner import Runner
from runners.failures import InfraFailure
from runners.judging.evaluate import evaluate_run
from runners.models.base import Completion
from runners.models.scripted import ScriptedBackend, default_script
from tests.faulty_http import FaultyServer
from tests.openai_standin import OpenAIStandin, Reply
from toolbench_adapter.errors import InputError
from toolbench_adapter.evaluation.evaluations import choose_evaluation

SAMPLE_QUERIES = 6  # data/sample: one evaluated query per group
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def run_args(tmp_path, name, *extra):
    return ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", *extra]


def answers(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("G*/*.json"))}


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def closed_port_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens there once the socket is closed


@pytest.fixture
def dying_server():
    """A tool server that answers the run's preflight, then resets every connection (a server that dies
    mid-run: one that is dead from the start is refused by the preflight, exit 2)."""
    with FaultyServer(["reset"], answers_preflight=True) as server:
        yield server.url


def test_dead_tool_server_exits_3_writes_no_answers_and_a_rerun_finishes_them(tmp_path, capsys, dying_server):
    dead = ["--server", dying_server, "--server-attempts", "2"]
    assert main(run_args(tmp_path, "dead", *dead)) == 3
    out = capsys.readouterr().out
    run_dir = tmp_path / "dead"
    assert answers(run_dir) == {}  # nothing at the upstream path: a rerun must redo every query
    assert len(list((run_dir / "failed").glob("*/*_CoT@1.json"))) == SAMPLE_QUERIES
    partial = json.loads(next((run_dir / "failed").glob("G1_instruction/*.json")).read_text())
    assert partial["infra_failure"]["failure_kind"] == "tool_server" and partial["trys"]
    errors = jsonl(run_dir / "errors.jsonl")
    assert len(errors) == SAMPLE_QUERIES and {e["failure_kind"] for e in errors} == {"tool_server"}
    assert all("connection_error" in e["failure_detail"] for e in errors)
    stats = jsonl(run_dir / "queries.jsonl")
    assert {s["outcome"] for s in stats} == {"infra_failure"}
    assert all(s["query_count"] == 1 for s in stats)  # the search stopped at the failed call: no more model calls
    manifest = json.loads((run_dir / "manifest.json").read_text())
    totals = manifest["totals"]
    assert (totals["finished"], totals["infra_failures"], totals["infra_failures_by_kind"]) == (
        0, SAMPLE_QUERIES, {"tool_server": SAMPLE_QUERIES})
    assert totals["win"] == 0 and totals["valid"] == 0
    steps = [s for s in jsonl(run_dir / "steps.jsonl") if s["call"] and s["call"] != "Finish"]
    assert len(steps) == SAMPLE_QUERIES
    assert all((s["reply_kind"], s["attempts"], s["http_status"], s["infra_failure"], s["faults"]) ==
               ("connection_error", 2, None, "tool_server", ["connection_error", "connection_error"]) for s in steps)
    assert f"INFRASTRUCTURE FAILURES {SAMPLE_QUERIES} (tool_server {SAMPLE_QUERIES})" in out
    redo = next(line for line in out.splitlines() if "redo them" in line)
    assert redo.endswith("tba run " + " ".join(run_args(tmp_path, "dead", *dead)[1:]))
    # tba evaluate refuses the run and names the command that redoes the failures
    assert main(["evaluate", str(run_dir), "--judge-url", closed_port_url(), "--quiet"]) == 2
    assert "re-run `tba run " + " ".join(run_args(tmp_path, "dead", *dead)[1:]) + "`" in capsys.readouterr().err
    # the same run with a live (embedded) server: every failed query is redone and finishes
    assert main(run_args(tmp_path, "dead")) == 0
    assert len(answers(run_dir)) == SAMPLE_QUERIES
    assert not (run_dir / "failed").exists()
    totals = json.loads((run_dir / "manifest.json").read_text())["totals"]
    assert (totals["finished"], totals["infra_failures"], totals["win"]) == (SAMPLE_QUERIES, 0, SAMPLE_QUERIES)


def test_rerun_redoes_exactly_the_failed_queries(tmp_path):
    failing = {900003, 900006}

    def flaky(request):  # the model endpoint gives up on two queries
        if request.key["query_id"] in failing:
            return Completion(error="endpoint gave up after 3 attempts", error_kind="model_endpoint")
        return default_script(request)

    cfg = RunConfig(name="flaky", out_root=str(tmp_path), backend="scripted")
    first = Runner(cfg, backend=ScriptedBackend(flaky, natural_dialect="openai-tools"), progress=False).run()
    run_dir = tmp_path / "flaky"
    assert first["totals"]["infra_failures_by_kind"] == {"model_endpoint": 2}
    assert first["totals"]["finished"] == 4
    done = answers(run_dir)
    assert len(done) == 4 and not any(str(q) in name for q in failing for name in done)
    assert {e["query_id"] for e in jsonl(run_dir / "errors.jsonl")} == failing
    model_error = [s for s in jsonl(run_dir / "steps.jsonl") if s["error"] == "model_error"]
    assert {s["query_id"] for s in model_error} == failing and {s["infra_failure"] for s in model_error} == {
        "model_endpoint"}
    healthy = ScriptedBackend()
    second = Runner(cfg, backend=healthy, progress=False).run()
    assert {r.key["query_id"] for r in healthy.requests} == failing  # the finished four are skipped
    after = answers(run_dir)
    assert len(after) == SAMPLE_QUERIES and all(after[name] == content for name, content in done.items())
    assert second["sessions"][-1]["skipped_as_done"] == 4
    assert (second["totals"]["finished"], second["totals"]["infra_failures"]) == (SAMPLE_QUERIES, 0)
    for session in second["sessions"]:
        assert ISO_UTC.match(session["started"]) and ISO_UTC.match(session["finished"])


def test_model_endpoint_failing_after_retries_is_an_infra_failure(tmp_path, capsys):
    finish = Reply(tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "Finish", "arguments": json.dumps({"return_type": "give_answer", "final_answer": "done"})}}])
    with OpenAIStandin(chat=[finish]) as standin:
        args = ["run", "--name", "ep", "--out-root", str(tmp_path), "--backend", "openai-chat", "--base-url",
                standin.url, "--model", standin.model, "--dialect", "openai-tools", "--groups", "G1_tool",
                "G2_category", "--backend-option", "retries=1", "--backend-option", "backoff=0.01", "--quiet"]
        standin.fail_next(4, 503)  # two queries x (1 try + 1 retry)
        assert main(args) == 3
        assert "model_endpoint 2" in capsys.readouterr().out
        assert standin.count("chat/completions") == 4  # each query stopped at its failed call
        run_dir = tmp_path / "ep"
        assert answers(run_dir) == {}
        assert {e["failure_kind"] for e in jsonl(run_dir / "errors.jsonl")} == {"model_endpoint"}
        assert main(args) == 0  # the endpoint is back: the rerun finishes both
    assert len(answers(run_dir)) == 2


def test_a_python_exception_is_a_harness_error_with_a_traceback(tmp_path):
    def broken(request):
        if request.key["query_id"] == 900004:
            raise RuntimeError("bug in a script")
        return default_script(request)

    cfg = RunConfig(name="bug", out_root=str(tmp_path), backend="scripted")
    manifest = Runner(cfg, backend=ScriptedBackend(broken, natural_dialect="openai-tools"), progress=False).run()
    assert manifest["totals"]["infra_failures_by_kind"] == {"harness_error": 1}
    failed = json.loads((tmp_path / "bug" / "failed" / "G1_tool" / "900004_CoT@1.json").read_text())
    assert "RuntimeError: bug in a script" in failed["traceback"] and failed["trees"]
    assert not (tmp_path / "bug" / "G1_tool" / "900004_CoT@1.json").exists()


@pytest.mark.parametrize("extra,needle", [
    (["--dialect", "json-object"], "--dialect openai-tools"),
    (["--dialect", "openai-tools", "--parser", "react-find"], "--parser openai-tools"),
])
def test_a_backend_and_parser_that_do_not_fit_are_refused(tmp_path, capsys, extra, needle):
    assert main(run_args(tmp_path, "misfit", *extra)) == 2
    err = capsys.readouterr().err
    assert "scripted backend answers with native tool calls" in err and needle in err
    assert not (tmp_path / "misfit").exists()  # refused before anything was written


@pytest.mark.parametrize("extra", [["--parser", "react-find"], ["--dialect", "toolllama"],
                                   ["--parser", "react-robust", "--method", "DFS_woFilter_w2"]])
def test_the_scripted_agent_answers_a_text_prompt_in_toolllama_text(tmp_path, extra):
    """The scripted agent speaks ToolLLaMA text too: a text parser with no dialect gets toolllama (the sweep spec
    of issue 34 names react-find on the scripted backend), and its calls are read."""
    assert main(run_args(tmp_path, "text", "--limit", "1", "--groups", "G1_tool", *extra)) == 0
    manifest = json.loads((tmp_path / "text" / "manifest.json").read_text())
    assert manifest["config"]["dialect"] == "toolllama"
    assert manifest["totals"]["valid"] == 1 and manifest["totals"]["answered"] == 1
    steps = [json.loads(line) for line in (tmp_path / "text" / "steps.jsonl").read_text().splitlines()]
    assert steps[0]["error"] == "none" and steps[0]["call"] != "Finish"  # the first function, read from the text


def test_the_backend_brings_its_natural_dialect(tmp_path, capsys):
    assert main(run_args(tmp_path, "natural", "--limit", "1", "--groups", "G1_tool")) == 0
    manifest = json.loads((tmp_path / "natural" / "manifest.json").read_text())
    assert manifest["config"]["dialect"] == "openai-tools" and manifest["parser"] == "openai-tools"
    assert manifest["totals"]["valid"] == 1  # the default text dialect would have read nothing
    assert main(run_args(tmp_path, "natural", "--limit", "1", "--groups", "G1_tool")) == 0  # the same run


@pytest.mark.parametrize("extra,needle", [
    (["--method", "CoT@0"], "CoT@N needs N >= 1"),
    (["--method", "DFS_woFilter_w0"], "DFS_woFilter_wN needs N >= 1"),
    (["--method", "CoT@-1"], "unknown method"),
    (["--method", "CoT@two"], "unknown method"),
    (["--limit", "0"], "limit must be at least 1"),
    (["--max-query-count", "0"], "max_query_count must be at least 1"),
    (["--server-attempts", "0"], "server_attempts must be at least 1"),
])
def test_bad_methods_and_limits_are_refused(tmp_path, capsys, extra, needle):
    assert main(run_args(tmp_path, "bad", *extra)) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_summary_lines_and_json(tmp_path, capsys):
    assert main(run_args(tmp_path, "sum")) == 0
    out = capsys.readouterr().out
    assert f"run {tmp_path / 'sum'}: {SAMPLE_QUERIES} queries ({SAMPLE_QUERIES} ran now, 0 already done)" in out
    assert f"finished {SAMPLE_QUERIES}: valid 6, answered 6, win 6 (not judged yet)" in out
    assert "infrastructure failures 0" in out
    assert f"next: tba evaluate {tmp_path / 'sum'}" in out
    assert main(run_args(tmp_path, "sum", "--json")) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["queries"], data["finished"], data["infra_failures"], data["redo"]) == (SAMPLE_QUERIES,
                                                                                          SAMPLE_QUERIES, 0, None)


def test_the_progress_bar_counts_and_names_infra_failures():
    outcomes = [QueryOutcome("G1_tool", 1, answered=True, valid=True), QueryOutcome("G1_tool", 2),
                QueryOutcome("G1_tool", 3, failure=InfraFailure("tool_server", "x")),
                QueryOutcome("G1_tool", 4, failure=InfraFailure("model_endpoint", "y")),
                QueryOutcome("G1_tool", 5, failure=InfraFailure("tool_server", "z"))]
    assert progress_postfix(outcomes) == "finished=2 answered=1 infra=3 (model_endpoint 1, tool_server 2)"


def test_run_help_defines_the_counts_and_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    for needle in ("valid ", "answered ", "win ", "3 the run folder holds infrastructure", "tool_server",
                   "model_endpoint", "replay_gap", "harness_error"):
        assert needle in out


class SolvedJudge:
    """An in-process judge client: every answer is Solved."""

    name = "solved-judge"
    supports_tools = True

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        arguments = json.dumps({"reason": "fine", "answer_status": "Solved"})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


def test_evaluate_refuses_a_run_with_infra_failures_unless_scored_anyway(tmp_path, capsys):
    def flaky(request):
        if request.key["query_id"] == 900005:
            return Completion(error="no recorded turn", error_kind="replay_gap")
        return default_script(request)

    cfg = RunConfig(name="part", out_root=str(tmp_path), backend="scripted")
    Runner(cfg, backend=ScriptedBackend(flaky, natural_dialect="openai-tools"), progress=False).run()
    run_dir = tmp_path / "part"
    # refused before any judge is asked (this URL answers nothing)
    assert main(["evaluate", str(run_dir), "--judge-url", closed_port_url(), "--quiet", "--cache",
                 str(tmp_path / "cache.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "1 of 6 queries ended in infrastructure failures (replay_gap 1)" in err
    assert "--score-anyway" in err and "errors.jsonl" in err
    assert not (run_dir / "tables").exists() and not (run_dir / "converted").exists()
    with pytest.raises(InputError):
        evaluate_run(run_dir, SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)
    result = evaluate_run(run_dir, SolvedJudge(), evaluate_times=1, cache_path=None, progress=False,
                          score_anyway=True, model_label="loud")
    table = (choose_evaluation(run_dir)[0].tables_dir / "leaderboard_sopr_upstream.md").read_text()
    assert "| loud (CoT@1) † | 100.0 |" in table
    assert "† loud (CoT@1): scored with 1 of 6 queries lost to infrastructure failures (replay_gap 1)" in table
    assert "| loud (CoT@1) † |" in result.text


@pytest.mark.parametrize("backend,dialect,options,needle", [
    ("openai-completions", "openai-tools", {}, "takes a text prompt"),
    ("openai-completions", "json-object", {}, "takes a text prompt"),
    ("openai-completions", "toolllama", {"template": "chat"}, "takes a text prompt"),
    ("openai-chat", "toolllama", {}, "takes chat messages"),
    ("hf", "openai-tools", {}, "no native tool calls"),
])
def test_a_dialect_the_backend_cannot_take_is_refused_before_the_run(backend, dialect, options, needle):
    """Every turn would fail alike ("needs a text prompt", tools dropped): refuse with the fix instead."""
    from runners.execution.preflight import fit_dialect
    from runners.models import BACKENDS

    cfg = RunConfig(name="x", backend=backend, dialect=dialect, dialect_options=options)
    with pytest.raises(InputError) as refused:
        fit_dialect(cfg, BACKENDS.get(backend))  # the class: its capabilities are class attributes
    assert needle in str(refused.value) and refused.value.fix


@pytest.mark.parametrize("backend,dialect,options", [
    ("openai-completions", "toolllama", {}),
    ("openai-chat", "toolllama", {"template": "chat"}),
    ("openai-chat", "openai-tools", {}),
    ("openai-chat", "hermes", {}),
    ("hf", "toolllama", {}),
    ("hf", "json-object", {}),
])
def test_dialects_the_backend_takes_pass(backend, dialect, options):
    from runners.execution.preflight import fit_dialect
    from runners.models import BACKENDS

    cfg = RunConfig(name="x", backend=backend, dialect=dialect, dialect_options=options)
    assert fit_dialect(cfg, BACKENDS.get(backend)).dialect == dialect


def test_evaluate_judges_no_group_without_answer_files(tmp_path):
    """A group whose folder holds no answer file of the run's method gets no converted file and no row."""
    cfg = RunConfig(name="gaps", out_root=str(tmp_path), backend="scripted", groups=["G1_tool", "G2_category"])
    Runner(cfg, backend=ScriptedBackend(), progress=False).run()
    run_dir = tmp_path / "gaps"
    (run_dir / "G3_instruction").mkdir()  # left empty: every query of it failed
    evaluate_run(run_dir, SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)
    assert sorted(p.name for p in (run_dir / "converted" / "gaps").iterdir()) == ["G1_tool.json", "G2_category.json"]
    for path in run_dir.glob("G*/*_CoT@1.json"):
        path.unlink()
    with pytest.raises(InputError, match="no CoT@1 answer files"):
        evaluate_run(run_dir, SolvedJudge(), evaluate_times=1, cache_path=None, progress=False)


def test_a_dead_server_stops_the_run_early_and_a_rerun_redoes_everything(tmp_path, capsys, dying_server):
    """After N queries in a row fail for infrastructure reasons the rest are not started (no model call is
    spent on them), yet each is recorded, counted and redone by the same command."""
    dead = ["--server", dying_server, "--server-attempts", "1", "--stop-after-infra-failures", "2"]
    backend = ScriptedBackend()
    cfg_args = run_args(tmp_path, "stop", *dead)
    assert main(cfg_args) == 3
    captured = capsys.readouterr()
    run_dir = tmp_path / "stop"
    stats = jsonl(run_dir / "queries.jsonl")
    assert len(stats) == SAMPLE_QUERIES and {s["failure_kind"] for s in stats} == {"tool_server"}
    started = [s for s in stats if not s.get("not_started")]
    assert len(started) == 2 and all(s["query_count"] == 1 for s in started)
    assert all(s["query_count"] == 0 and "not started: 2 queries in a row" in s["failure_detail"]
               for s in stats if s.get("not_started"))
    assert len(jsonl(run_dir / "errors.jsonl")) == SAMPLE_QUERIES
    assert len(list((run_dir / "failed").glob("*/*.json"))) == 2  # only the started ones left a tree
    session = json.loads((run_dir / "manifest.json").read_text())["sessions"][-1]
    assert session["halted"].startswith("4 queries not started after 2 in a row failed (tool_server)")
    assert "STOPPED EARLY: 4 queries not started" in captured.out
    assert "starting no more queries" in captured.err
    # 0 never stops: every query is tried and fails on its own
    never = run_args(tmp_path, "never", *dead[:-1], "0")
    assert main(never) == 3
    assert all(not s.get("not_started") for s in jsonl(tmp_path / "never" / "queries.jsonl"))
    # the server is back: the same run redoes all six, started or not
    cfg = RunConfig(name="stop", out_root=str(tmp_path), backend="scripted")
    manifest = Runner(cfg, backend=backend, progress=False).run()
    assert len({r.key["query_id"] for r in backend.requests}) == SAMPLE_QUERIES
    assert (manifest["totals"]["finished"], manifest["totals"]["infra_failures"]) == (SAMPLE_QUERIES, 0)
    assert len(answers(run_dir)) == SAMPLE_QUERIES


def test_a_negative_stop_limit_is_refused(tmp_path, capsys):
    assert main(run_args(tmp_path, "neg", "--stop-after-infra-failures", "-1")) == 2
    assert "stop_after_infra_failures" in capsys.readouterr().err
