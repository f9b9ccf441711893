"""The parser fan-out (tba run --parsers): byte-identical variants, shared model calls, shared judge cache."""

from __future__ import annotations

import json
import shlex
import threading
import time
from dataclasses import replace

import pytest

from runners.cli import main
from runners.config import RunConfig
from runners.execution.fanout import run_fanout
from runners.execution.runner import Runner
from runners.judging.evaluate import evaluate_run
from runners.models import BACKENDS
from runners.models.base import Completion, ModelRequest
from runners.models.memo import MemoBackend, SamplingNotMemoizable
from runners.models.react_script import diverges, react_script
from runners.models.scripted import ScriptedBackend
from toolbench_adapter.evaluation.evaluations import choose_evaluation

TOOLS = "data/sample/toolenv/tools"
QUERIES = 6  # the sample set: one evaluated query per group
DIVERGENT = 2  # react_script adds a connective line after the JSON on query ids divisible by 3 (two of six)


def config(tmp_path, name, **changes) -> RunConfig:
    return RunConfig(name=name, out_root=str(tmp_path), backend="scripted", dialect="toolllama", tool_root=TOOLS,
                     **changes)


def answers(run_dir):
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("G*/*.json"))}


def test_variant_answer_files_are_byte_identical_to_separate_runs(tmp_path):
    parsers = ["react-find", "react-robust"]
    result = run_fanout(config(tmp_path, "set"), parsers, backend=ScriptedBackend(script=react_script),
                        progress=False)
    for parser in parsers:
        separate = config(tmp_path, f"alone-{parser}", parser=parser)
        Runner(separate, backend=ScriptedBackend(script=react_script), progress=False).run()
        variant_files = answers(tmp_path / "set" / parser)
        assert len(variant_files) == QUERIES
        assert variant_files == answers(separate.run_dir)
    # the two parsers really lead to different trajectories on the divergent queries, the same elsewhere
    find, robust = answers(tmp_path / "set" / "react-find"), answers(tmp_path / "set" / "react-robust")
    differing = sorted(name for name in find if find[name] != robust[name])
    assert len(differing) == DIVERGENT
    assert all(diverges(int(name.split("/")[1].split("_")[0])) for name in differing)
    assert result.parsers == parsers


def test_model_calls_are_shared_until_the_trajectories_diverge(tmp_path):
    backend = ScriptedBackend(script=react_script)
    result = run_fanout(config(tmp_path, "set"), ["react-find", "react-robust", "react-regex"], backend=backend,
                        progress=False)
    one_run = 2 * QUERIES  # a call, then Finish
    # react-find cannot read the call on the divergent queries, so its second turn sees another prompt;
    # react-robust and react-regex read the same call and share every turn
    assert result.model_calls == len(backend.requests) == one_run + DIVERGENT
    assert result.separate_runs_calls == 3 * one_run
    assert result.memo_hits == result.separate_runs_calls - result.model_calls
    assert result.line() == f"fan-out: {one_run + DIVERGENT} model calls for 3 parsers (separate runs: {3 * one_run})"
    record = json.loads((tmp_path / "set" / "fanout.json").read_text())
    assert record["model_calls"] == one_run + DIVERGENT and record["separate_runs_model_calls"] == 3 * one_run
    for parser in result.parsers:
        manifest = json.loads((tmp_path / "set" / parser / "manifest.json").read_text())
        assert manifest["parser"] == parser
        assert manifest["fanout"]["model_calls"] == one_run + DIVERGENT
        assert manifest["fanout"]["separate_runs_model_calls"] == 3 * one_run
        assert manifest["totals"]["model_calls"] == one_run  # each variant: what a separate run would ask


def test_temperature_above_zero_is_refused_before_any_work(tmp_path, capsys):
    code = main(["run", "--name", "hot", "--out-root", str(tmp_path), "--backend", "scripted", "--dialect",
                 "toolllama", "--parsers", "react-find,react-robust", "--temperature", "0.7", "--quiet"])
    assert code == 2
    err = capsys.readouterr().err
    assert "temperature" in err and "--parser" in err
    assert not (tmp_path / "hot").exists()


def test_memo_refuses_sampling_requests():
    memo = MemoBackend(ScriptedBackend(script=lambda request: "x"))
    with pytest.raises(SamplingNotMemoizable):
        memo.complete(ModelRequest(prompt="p", temperature=0.5))


def test_memo_counts_hits_and_misses_and_keys_on_the_whole_request():
    inner = ScriptedBackend(script=lambda request: f"echo {request.prompt} {request.max_tokens}")
    memo = MemoBackend(inner)
    first = memo.complete(ModelRequest(prompt="a", stop=["</s>"]))
    again = memo.complete(ModelRequest(prompt="a", stop=["</s>"]))
    assert again.text == first.text and again is not first
    memo.complete(ModelRequest(prompt="a", stop=["</s>", "\nThought:"]))  # another stop list: another request
    memo.complete(ModelRequest(prompt="a", stop=["</s>"], max_tokens=5))
    memo.complete(ModelRequest(prompt="a", stop=["</s>"], extra={"prefill": "Thought: "}))
    memo.complete(ModelRequest(messages=[{"role": "user", "content": "a"}], tools=[{"type": "function"}]))
    memo.complete(ModelRequest(messages=[{"role": "user", "content": "a"}], tools=[]))
    assert memo.counts() == {"model_calls": 6, "memo_hits": 1}
    assert len(inner.requests) == 6


def test_memo_does_not_keep_errors_and_asks_once_for_concurrent_twins():
    replies = iter([Completion(error="gave up", error_kind="model_endpoint"), Completion(text="fine")])
    memo = MemoBackend(ScriptedBackend(script=lambda request: next(replies)))
    assert memo.complete(ModelRequest(prompt="p")).error == "gave up"
    assert memo.complete(ModelRequest(prompt="p")).text == "fine"  # asked again, as a separate run would
    assert memo.counts()["model_calls"] == 2

    gate = threading.Event()

    def slow(request):
        gate.wait(5)
        return "once"

    twin_memo = MemoBackend(ScriptedBackend(script=slow))
    results = []
    threads = [threading.Thread(target=lambda: results.append(twin_memo.complete(ModelRequest(prompt="q")).text))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(0.3)  # let all four reach the memo while the first is still being answered
    gate.set()
    for thread in threads:
        thread.join(5)
    assert results == ["once"] * 4
    assert twin_memo.counts() == {"model_calls": 1, "memo_hits": 3}


@pytest.fixture
def react_backend(monkeypatch):
    """`--backend react-script` for CLI tests: the deterministic ReAct model as a registered backend."""
    monkeypatch.setitem(BACKENDS._entries, "react-script",
                        lambda **options: ScriptedBackend(script=react_script, **options))
    return "react-script"


def test_cli_fanout_prints_the_counts_and_resumes(tmp_path, react_backend, capsys):
    args = ["run", "--name", "set", "--out-root", str(tmp_path), "--backend", react_backend, "--dialect",
            "toolllama", "--tool-root", TOOLS, "--parsers", "react-find,react-robust", "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert f"fan-out: {2 * QUERIES + DIVERGENT} model calls for 2 parsers (separate runs: {4 * QUERIES})" in out
    before = {p: answers(tmp_path / "set" / p) for p in ("react-find", "react-robust")}
    assert main(args) == 0  # the same command again: every query is done, nothing is asked
    again = capsys.readouterr().out
    assert f"fan-out: {2 * QUERIES + DIVERGENT} model calls for 2 parsers (separate runs: {4 * QUERIES}); " \
           "this session 0 (separate runs: 0)" in again
    manifest = json.loads((tmp_path / "set" / "react-find" / "manifest.json").read_text())
    assert manifest["fanout"]["model_calls"] == 2 * QUERIES + DIVERGENT  # the set's figure survives a rerun
    assert {p: answers(tmp_path / "set" / p) for p in before} == before


def test_cli_fanout_rejects_a_single_or_unknown_parser(tmp_path, react_backend, capsys):
    base = ["run", "--name", "set", "--out-root", str(tmp_path), "--backend", react_backend, "--quiet"]
    assert main([*base, "--parsers", "react-find"]) == 2
    assert "at least two" in capsys.readouterr().err
    assert main([*base, "--parsers", "react-find,react-robst"]) == 2
    assert "react-robust" in capsys.readouterr().err  # did you mean
    assert not (tmp_path / "set").exists()


class CountingJudge:
    """An in-process judge client: Solved for every answer; counts the requests that reach it."""

    name = "counting-judge"
    supports_tools = True

    def __init__(self):
        self.requests = 0
        self._lock = threading.Lock()

    def chat(self, messages, *, tools=None, tool_choice=None, temperature=None, max_tokens=None, **_):
        with self._lock:
            self.requests += 1
        arguments = json.dumps({"reason": "counted", "answer_status": "Solved"})
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": tool_choice["function"]["name"],
                                                          "arguments": arguments}}]}


def test_variants_share_one_judge_cache(tmp_path):
    """tba evaluate on each variant with one cache file: the judge sees each distinct answer once."""
    run_fanout(config(tmp_path, "set"), ["react-find", "react-robust"], backend=ScriptedBackend(script=react_script),
               progress=False)
    judge = CountingJudge()
    cache = tmp_path / "judge.jsonl"
    evaluate_run(tmp_path / "set" / "react-find", judge, evaluate_times=1, cache_path=str(cache), progress=False)
    first = judge.requests
    assert first >= QUERIES
    evaluate_run(tmp_path / "set" / "react-robust", judge, evaluate_times=1, cache_path=str(cache), progress=False)
    # only the answers that differ (the divergent queries) are judged again
    assert 0 < judge.requests - first <= DIVERGENT * (first // QUERIES)
    judged = choose_evaluation(tmp_path / "set" / "react-robust")[0].eval_dir  # evaluations are kept per judge
    metas = [json.loads(p.read_text()) for p in sorted(judged.glob("*.meta.json"))]
    assert sum(m["cache_hits"] for m in metas) == QUERIES - DIVERGENT


def test_a_memo_hit_is_not_visible_in_the_answer_files(tmp_path):
    """A variant run after another (all memo hits) writes what it writes when it runs first."""
    order_a = run_fanout(config(tmp_path, "a"), ["react-robust", "react-find"],
                         backend=ScriptedBackend(script=react_script), progress=False)
    order_b = run_fanout(replace(config(tmp_path, "b")), ["react-find", "react-robust"],
                         backend=ScriptedBackend(script=react_script), progress=False)
    assert order_a.model_calls == order_b.model_calls
    for parser in ("react-find", "react-robust"):
        assert answers(tmp_path / "a" / parser) == answers(tmp_path / "b" / parser)


def test_cli_fanout_exits_3_on_infrastructure_failures_and_the_rerun_redoes_them(tmp_path, monkeypatch, capsys):
    broken = {"on": True}

    def flaky(request):
        if broken["on"] and request.key.get("query_id") == 900004:
            return Completion(error="endpoint gave up after 3 attempts", error_kind="model_endpoint")
        return react_script(request)

    monkeypatch.setitem(BACKENDS._entries, "flaky-script", lambda **options: ScriptedBackend(script=flaky, **options))
    args = ["run", "--name", "set", "--out-root", str(tmp_path), "--backend", "flaky-script", "--dialect",
            "toolllama", "--tool-root", TOOLS, "--parsers", "react-find,react-robust", "--quiet"]
    assert main(args) == 3
    assert "FAILURES in react-find, react-robust" in capsys.readouterr().out
    assert all(len(answers(tmp_path / "set" / p)) == QUERIES - 1 for p in ("react-find", "react-robust"))
    broken["on"] = False
    assert main(args) == 0
    assert "this session 2 (separate runs: 4)" in capsys.readouterr().out  # only the failed query, per variant
    assert all(len(answers(tmp_path / "set" / p)) == QUERIES for p in ("react-find", "react-robust"))


def test_cli_fanout_json_prints_one_summary_object_and_keeps_the_command_as_redo(tmp_path, monkeypatch, capsys):
    def flaky(request):
        if request.key.get("query_id") == 900004:
            return Completion(error="endpoint gave up after 3 attempts", error_kind="model_endpoint")
        return react_script(request)

    monkeypatch.setitem(BACKENDS._entries, "flaky-script", lambda **options: ScriptedBackend(script=flaky, **options))
    args = ["run", "--name", "set", "--out-root", str(tmp_path), "--backend", "flaky-script", "--dialect",
            "toolllama", "--tool-root", TOOLS, "--parsers", "react-find,react-robust", "--quiet", "--json"]
    assert main(args) == 3
    summary = json.loads(capsys.readouterr().out)  # the whole output is one JSON object
    redo = "tba " + shlex.join(args)
    assert summary["set"] == str(tmp_path / "set") and summary["redo"] == redo
    assert set(summary["variants"]) == {"react-find", "react-robust"}
    for parser, variant in summary["variants"].items():
        assert variant["run"] == str(tmp_path / "set" / parser)
        assert (variant["queries"], variant["infra_failures"]) == (QUERIES, 1)
        assert variant["infra_failures_by_kind"] == {"model_endpoint": 1}
        # each variant's manifest keeps the command line that started it: the redo of its summary
        manifest = json.loads((tmp_path / "set" / parser / "manifest.json").read_text())
        assert manifest["sessions"][-1]["command"] == redo
    record = json.loads((tmp_path / "set" / "fanout.json").read_text())
    assert summary["model_calls"] == record["model_calls"] == summary["session_model_calls"] > 0
    assert summary["separate_runs_model_calls"] == record["separate_runs_model_calls"] > summary["model_calls"]
    assert summary["failed_variants"] == ["react-find", "react-robust"]


class InterruptedAfter:
    """A backend that answers ``calls`` requests, then is interrupted (Ctrl-C) on the next one."""

    def __init__(self, calls: int):
        self.inner = ScriptedBackend(script=react_script)
        self.left = calls

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def complete(self, request):
        if self.left == 0:
            raise KeyboardInterrupt
        self.left -= 1
        return self.inner.complete(request)


def test_an_interrupted_fanout_still_adds_its_calls_to_the_set_counts(tmp_path):
    one_run = 2 * QUERIES
    with pytest.raises(KeyboardInterrupt):
        run_fanout(config(tmp_path, "set"), ["react-find", "react-robust"], backend=InterruptedAfter(one_run),
                   progress=False)
    # react-find ran whole (12 calls); react-robust shared turns through the memo until the first turn the memo
    # lacked (a divergent query's second turn), which was interrupted: counted as sent
    record = json.loads((tmp_path / "set" / "fanout.json").read_text())
    assert record["model_calls"] == one_run + 1
    assert record["separate_runs_model_calls"] > one_run + 1  # react-robust's memo hits before the interrupt
    manifest = json.loads((tmp_path / "set" / "react-find" / "manifest.json").read_text())
    assert manifest["fanout"]["model_calls"] == one_run + 1  # the finished variant's manifest has the figures
    # the resumed set adds what it asks to the interrupted session's figures
    result = run_fanout(config(tmp_path, "set"), ["react-find", "react-robust"],
                        backend=ScriptedBackend(script=react_script), progress=False)
    assert result.session_model_calls > 0
    assert result.model_calls == one_run + 1 + result.session_model_calls
    assert result.separate_runs_calls == record["separate_runs_model_calls"] + result.session_separate_runs_calls
