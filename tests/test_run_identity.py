"""A run folder's identity and its one writer (issue 21): one model per folder (also when the model comes from
the endpoint), one command at a time (a lock; a killed holder is taken over), step records that survive a kill,
a request refused as longer than the model's context as the model's limit (not an infrastructure failure), and
a malformed endpoint reply named by endpoint."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from fastapi.responses import JSONResponse

from runners.cli import main
from runners.config import RunConfig, select_queries
from runners.execution.executors import RayExecutor
from runners.execution.fanout import run_fanout
from runners.execution.runlock import FolderBusy, RunFolderLock, live_holder, lock_path
from runners.execution.runner import Runner
from runners.failures import CONTEXT_LENGTH, MODEL_ENDPOINT
from runners.models.base import Completion, ModelRequest
from runners.models.openai_chat import OpenAIChatBackend
from runners.models.openai_completions import OpenAICompletionsBackend
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend, default_script, scripted_call
from tests.openai_standin import OpenAIStandin, Reply
from tests.ray_support import needs_ray
from toolbench_adapter.report.headline import headline
from toolbench_adapter.report.run_data import load_run
from toolbench_adapter.report.taxonomy import read_taxonomy, taxonomy_tables
from toolbench_adapter.report.taxonomy import to_markdown as taxonomy_markdown

ROOT = Path(__file__).resolve().parents[1]
ORDER = [(q.group, q.query_id) for q in select_queries(RunConfig(name="x"))]  # the sample set, in run order


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def answers(run_dir: Path) -> dict:
    return {p.relative_to(run_dir).as_posix(): p.read_bytes() for p in sorted(run_dir.glob("G*/*.json"))}


def finish(answer: str = "done") -> Reply:
    return Reply(tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "Finish", "arguments": json.dumps({"return_type": "give_answer", "final_answer": answer})}}])


class RawReply(Exception):
    """Raised by a stand-in's respond(): the endpoint answers exactly this status and JSON body."""

    def __init__(self, status: int, body: object):
        super().__init__(status)
        self.status, self.body = status, body


class RawStandin(OpenAIStandin):
    """The OpenAI stand-in, whose respond() may raise RawReply: an error body as vLLM or OpenAI send it, or a
    200 of the wrong shape."""

    def _app(self):
        app = super()._app()

        @app.exception_handler(RawReply)
        async def raw(request, exc: RawReply):
            return JSONResponse(status_code=exc.status, content=exc.body)

        return app


def chat_args(tmp_path, name, url, *extra):
    return ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "openai-chat", "--base-url", url,
            "--dialect", "openai-tools", "--backend-option", "retries=1", "--backend-option", "backoff=0.01",
            "--quiet", *extra]


# -- one model per run folder --------------------------------------------------------------------------------------

def test_a_rerun_against_an_endpoint_serving_another_model_is_refused(tmp_path, capsys):
    run_dir = tmp_path / "m"
    with OpenAIStandin(models=("model-a",), chat=[finish()]) as a:  # no --model: the served one is adopted
        assert main(chat_args(tmp_path, "m", a.url, "--groups", "G1_tool")) == 0
    assert json.loads((run_dir / "manifest.json").read_text())["model"] == "model-a"
    done = answers(run_dir)
    capsys.readouterr()
    with OpenAIStandin(models=("model-b",), chat=[finish()]) as b:
        assert main(chat_args(tmp_path, "m", b.url)) == 2  # the other groups are pending: they would run on B
        assert b.count("chat/completions") == 0
    err = capsys.readouterr().err
    assert str(run_dir) in err and "'model-a'" in err and "'model-b'" in err
    assert "no --model given" in err and "--model model-a" in err and "choose another --name" in err
    assert answers(run_dir) == done
    # the model it ran, given explicitly, resumes (the manifest's config had no model)
    with OpenAIStandin(models=("model-a",), chat=[finish()]) as a:
        assert main(chat_args(tmp_path, "m", a.url, "--model", "model-a")) == 0
    assert len(answers(run_dir)) == 6


def test_merge_refuses_shards_of_two_models(tmp_path, capsys):
    for shard, model in (("1/2", "model-a"), ("2/2", "model-b")):
        with OpenAIStandin(models=(model,), chat=[finish()]) as standin:
            assert main(chat_args(tmp_path, f"s{shard[0]}", standin.url, "--shard", shard)) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "all")]) == 2
    assert "different settings (model)" in capsys.readouterr().err
    assert not (tmp_path / "all").exists()


# -- one command at a time -----------------------------------------------------------------------------------------

def start_child(tmp_path, marker: Path, hang: str, *argv: str) -> subprocess.Popen:
    """tests/run_identity_child.py: a real `tba run` whose model call for ``hang`` blocks after marking it."""
    return subprocess.Popen([sys.executable, "-m", "tests.run_identity_child", str(marker), hang, *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_marks(marker: Path, count: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if marker.exists() and len(marker.read_text().splitlines()) >= count:
            return
        if proc.poll() is not None:
            pytest.fail(f"the child ended early: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the child never reached the blocking model call")


def tba(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runners.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_a_second_run_on_the_same_name_exits_2_naming_the_holder_and_a_killed_one_is_taken_over(tmp_path):
    args = ["run", "--name", "same", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    marker = tmp_path / "marks"
    holder = start_child(tmp_path, marker, "any", *args)
    try:
        wait_for_marks(marker, 1, holder)  # the holder is inside its first query
        second = tba(*args)
        assert second.returncode == 2, second.stderr
        assert f"pid {holder.pid} on {socket.gethostname()} since 20" in second.stderr
        assert "run --name same" in second.stderr and "choose another --name" in second.stderr
        run_dir = tmp_path / "same"
        assert not (run_dir / "queries.jsonl").exists()  # the second ran nothing
        assert live_holder(run_dir)["pid"] == holder.pid
    finally:
        holder.kill()  # SIGKILL: no cleanup, the lock file stays
        holder.communicate()
    assert lock_path(run_dir).exists() and live_holder(run_dir) is None
    third = tba(*args)
    assert third.returncode == 0, third.stderr
    assert f"taking over the lock of pid {holder.pid}" in third.stderr
    assert not lock_path(run_dir).exists()  # released at the end
    ids = [s["query_id"] for s in jsonl(run_dir / "queries.jsonl")]
    assert sorted(ids) == sorted({q for _, q in ORDER})  # each query once: the killed session had finished none
    sessions = json.loads((run_dir / "manifest.json").read_text())["sessions"]
    assert len(sessions) == 2 and "finished" not in sessions[0] and "finished" in sessions[1]


def test_deleting_the_lock_file_of_a_live_run_does_not_let_a_second_run_in(tmp_path):
    """Issue 35 minor: the lock file deleted by hand while a run holds it; the second `tba run` took a new one and
    ran every query twice. The holder's lock on the run folder itself still refuses it."""
    args = ["run", "--name", "same", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    marker = tmp_path / "marks"
    holder = start_child(tmp_path, marker, "any", *args)
    run_dir = tmp_path / "same"
    try:
        wait_for_marks(marker, 1, holder)
        lock_path(run_dir).unlink()
        second = tba(*args)
        assert second.returncode == 2, second.stderr
        assert "another command is writing this run folder" in second.stderr and "was deleted" in second.stderr
        assert not (run_dir / "queries.jsonl").exists() and not lock_path(run_dir).exists()  # ran nothing, left nothing
        assert live_holder(run_dir) == {}  # running, though its details went with the file
    finally:
        holder.kill()
        holder.communicate()
    assert live_holder(run_dir) is None and tba(*args).returncode == 0  # the kernel let go with the process


def test_a_run_refused_before_any_query_leaves_no_folder_made_for_its_lock(tmp_path):
    folder = tmp_path / "run"
    with RunFolderLock(folder, "first", hold_folder=True):
        assert folder.is_dir()
    assert not folder.exists() and not lock_path(folder).exists()


def test_merge_and_the_parser_fanout_respect_the_lock(tmp_path, capsys):
    common = ["--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    for shard in ("1/2", "2/2"):
        assert main(["run", "--name", f"s{shard[0]}", "--shard", shard, *common]) == 0
    capsys.readouterr()
    with RunFolderLock(tmp_path / "s2", "tba run --name s2 --shard 2/2 (still running)"):  # a shard being written
        assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "all")]) == 2
        err = capsys.readouterr().err
        assert f"pid {os.getpid()}" in err and "(still running)" in err and "then merge" in err
    with RunFolderLock(tmp_path / "all", "tba run --name all"):  # --out being written by a run
        assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "all")]) == 2
        assert "tba run --name all" in capsys.readouterr().err
    assert main(["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "--out", str(tmp_path / "all")]) == 0
    assert not any(lock_path(tmp_path / name).exists() for name in ("s1", "s2", "all"))
    fanout = RunConfig(name="set", out_root=str(tmp_path), backend="scripted", dialect="toolllama",
                       tool_root="data/sample/toolenv/tools")
    with RunFolderLock(tmp_path / "set", "tba run --name set --parsers ..."):
        with pytest.raises(FolderBusy, match="tba run --name set --parsers"):
            run_fanout(fanout, ["react-find", "react-robust"], backend=ScriptedBackend(react_script), progress=False)
    assert not (tmp_path / "set" / "react-find").exists()
    run_fanout(fanout, ["react-find", "react-robust"], backend=ScriptedBackend(react_script), progress=False)
    assert len(answers(tmp_path / "set" / "react-find")) == 6


def test_a_lock_left_by_a_dead_process_is_taken_over_and_a_live_one_refused(tmp_path, capsys):
    folder = tmp_path / "run"
    with RunFolderLock(folder, "first") as first:
        assert first.taken_over is None and live_holder(folder)["command"] == "first"
        with pytest.raises(FolderBusy) as busy:
            RunFolderLock(folder, "second").acquire()
        assert busy.value.holder["command"] == "first"
    assert not lock_path(folder).exists() and live_holder(folder) is None
    # what a killed holder leaves: the file with its details, and no flock (the kernel dropped it)
    lock_path(folder).write_text(json.dumps({"pid": 999999, "host": "gone", "started": "2026-01-01T00:00:00Z",
                                             "command": "tba run --name run"}))
    with RunFolderLock(folder, "third") as third:
        assert third.taken_over["pid"] == 999999
    assert "taking over the lock of pid 999999 on gone" in capsys.readouterr().err


def test_without_flock_the_recorded_holder_is_the_lock(tmp_path, monkeypatch, capsys):
    """A filesystem without flock (Lustre without -o flock): a live holder on this host is refused, a dead one
    taken over, one on another host refused with the file to delete."""
    import errno

    from runners.execution import runlock

    def no_flock(fd, operation):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(runlock.fcntl, "flock", no_flock)
    folder = tmp_path / "run"
    with RunFolderLock(folder, "first"):
        with pytest.raises(FolderBusy, match="first"):
            RunFolderLock(folder, "second").acquire()
    assert not lock_path(folder).exists()
    dead = {"pid": 999999, "host": socket.gethostname(), "started": "2026-01-01T00:00:00Z", "command": "old"}
    lock_path(folder).write_text(json.dumps(dead))
    with RunFolderLock(folder, "third") as third:
        assert third.taken_over == dead
    lock_path(folder).write_text(json.dumps({**dead, "host": "elsewhere"}))
    with pytest.raises(FolderBusy) as busy:
        RunFolderLock(folder, "fourth").acquire()
    assert "on elsewhere" in str(busy.value) and f"delete {lock_path(folder)}" in str(busy.value)


@needs_ray
def test_a_ray_run_takes_the_lock_before_it_starts_anything(tmp_path, ray_cluster):
    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", executor="ray")
    with RunFolderLock(tmp_path / "r", "holder"):
        with pytest.raises(FolderBusy):
            Runner(cfg, progress=False, executor=RayExecutor(concurrency=1)).run()
    assert not (tmp_path / "r").exists()


def interrupt_driver(driver: int, request: ModelRequest) -> Completion:
    """The first query's first model call presses Ctrl-C in the driver process (a Ray worker is another one)."""
    if request.key["query_id"] == ORDER[0][1] and not request.key["path"]:
        os.kill(driver, signal.SIGINT)  # delivered before this reply reaches the driver: no second dispatch
    return default_script(request)


def interrupting_backend(driver: int) -> ScriptedBackend:
    return ScriptedBackend(functools.partial(interrupt_driver, driver), natural_dialect="openai-tools")


@needs_ray
def test_ctrl_c_under_ray_dispatches_no_more_and_lets_the_query_in_flight_finish(tmp_path, ray_cluster):
    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", executor="ray", concurrency=1)
    executor = RayExecutor(concurrency=1, backend_factory=functools.partial(interrupting_backend, os.getpid()))
    with pytest.raises(KeyboardInterrupt):
        Runner(cfg, backend=ScriptedBackend(), progress=False, executor=executor).run()
    run_dir = tmp_path / "r"
    assert list(answers(run_dir)) == [f"{ORDER[0][0]}/{ORDER[0][1]}_CoT@1.json"]
    [session] = json.loads((run_dir / "manifest.json").read_text())["sessions"]
    assert "finished" not in session and session["interrupted"] and session["not_started"] == 5
    assert session["queries_finished"] == 1 and session["executor"] == "ray"


# -- step records survive a kill; an interrupted run is recognisable ---------------------------------------------

def test_a_killed_run_keeps_every_finished_querys_steps_and_its_session_reads_as_interrupted(tmp_path):
    args = ["run", "--name", "k", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    marker = tmp_path / "marks"
    group, hang = ORDER[3]  # concurrency 1: the three before it have finished when it blocks
    proc = start_child(tmp_path, marker, str(hang), *args)
    wait_for_marks(marker, 1, proc)
    proc.kill()
    proc.communicate()
    run_dir = tmp_path / "k"
    finished = {(g, q) for g, q in ORDER[:3]}
    assert {tuple(p.relative_to(run_dir).parts) for p in run_dir.glob("G*/*.json")} == {
        (g, f"{q}_CoT@1.json") for g, q in finished}
    steps = jsonl(run_dir / "steps.jsonl")  # every line whole
    assert {(s["group"], s["query_id"]) for s in steps} == finished
    for g, q in finished:  # exactly the query's own records, once
        own = (run_dir / "steps" / g / f"{q}_CoT@1.jsonl").read_text().splitlines()
        assert [json.dumps(s) for s in steps if (s["group"], s["query_id"]) == (g, q)] == own
    [session] = json.loads((run_dir / "manifest.json").read_text())["sessions"]
    assert "started" in session and "finished" not in session  # how tba evaluate tells an interrupted run
    assert (session["queries_selected"], session["queries_to_run"]) == (6, 6)
    # the same command goes on: every query's records once
    assert main(args) == 0
    lines = (run_dir / "steps.jsonl").read_text().splitlines()
    assert len(lines) == len(set(lines)) and {json.loads(line)["query_id"] for line in lines} == {q for _, q in ORDER}
    assert Counter(s["query_id"] for s in jsonl(run_dir / "queries.jsonl")) == Counter(q for _, q in ORDER)


def seen_so_far(run_dir: str, last: int, request: ModelRequest) -> Completion:
    """The last query's answer names the queries whose records steps.jsonl holds when it starts."""
    if request.key["query_id"] == last:
        seen = sorted({s["query_id"] for s in jsonl(Path(run_dir) / "steps.jsonl")})
        call = scripted_call([], 1, final_answer="seen " + " ".join(map(str, seen)))
        return Completion(tool_calls=[call])
    return default_script(request)


def seen_backend(run_dir: str, last: int) -> ScriptedBackend:
    return ScriptedBackend(functools.partial(seen_so_far, run_dir, last), natural_dialect="openai-tools")


def check_steps_grew(tmp_path, executor=None):
    cfg = RunConfig(name="g", out_root=str(tmp_path), backend="scripted", concurrency=1,
                    executor="ray" if executor else "threads")
    group, last = ORDER[-1]
    Runner(cfg, backend=seen_backend(str(tmp_path / "g"), last), progress=False, executor=executor).run()
    answer = (tmp_path / "g" / group / f"{last}_CoT@1.json").read_text()
    assert "seen " + " ".join(str(q) for _, q in ORDER[:-1]) in answer


def test_steps_jsonl_holds_each_query_as_it_ends_on_threads(tmp_path):
    check_steps_grew(tmp_path)


@needs_ray
def test_steps_jsonl_holds_each_query_as_it_ends_on_ray(tmp_path, ray_cluster):
    last = ORDER[-1][1]
    factory = functools.partial(seen_backend, str(tmp_path / "g"), last)
    check_steps_grew(tmp_path, RayExecutor(concurrency=1, backend_factory=factory))


# -- a request longer than the model's context ---------------------------------------------------------------------

# the bodies servers send with HTTP 400 (their wording; tests only)
VLLM_BODY = {"object": "error", "message": "This model's maximum context length is 8192 tokens. However, you "
             "requested 9001 tokens (7977 in the messages, 1024 in the completion). Please reduce the length of "
             "the messages or completion.", "type": "BadRequestError", "param": None, "code": 400}
VLLM_MAX_TOKENS_BODY = {"error": {"message": "'max_tokens' or 'max_completion_tokens' is too large: 1024. This "
                                  "model's maximum context length is 8192 tokens and your request has 7500 input "
                                  "tokens (1024 > 8192 - 7500). None", "type": "BadRequestError", "param": None,
                                  "code": 400}}
VLLM_V1_BODY = {"error": {"message": "The decoder prompt (length 9000) is longer than the maximum model length of "
                          "8192. Make sure that `max_model_len` is no smaller than the number of text tokens.",
                          "type": "BadRequestError", "param": None, "code": 400}}
OPENAI_BODY = {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages "
                         "resulted in 130000 tokens. Please reduce the length of the messages.",
                         "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}


def refuse_after_the_first_tool_call(body_on_refusal):
    """Turn 1 calls a tool; the request that carries its observation is refused as too long."""
    def respond(endpoint, body):
        if endpoint == "completions" or any(m.get("role") == "tool" for m in body.get("messages", [])):
            raise RawReply(400, body_on_refusal)
        return Reply(tool_calls=[scripted_call(body.get("tools"), 0)])

    return respond


def executor_flags(request, executor: str) -> list[str]:
    """`--executor ray` on the module's Ray cluster (the fixture only when asked for), else threads."""
    if executor == "ray":
        request.getfixturevalue("ray_cluster")
        return ["--executor", "ray", "--concurrency", "2"]
    return []


# every server's body under threads; one of them under Ray too (the workers ask the endpoint, the driver records)
CONTEXT_CASES = [pytest.param(body, "threads", id=name) for body, name in (
    (VLLM_BODY, "vllm"), (VLLM_MAX_TOKENS_BODY, "vllm-max-tokens"), (VLLM_V1_BODY, "vllm-v1"), (OPENAI_BODY, "openai"))]
CONTEXT_CASES.append(pytest.param(VLLM_BODY, "ray", id="vllm-ray", marks=needs_ray))


@pytest.mark.parametrize("body,executor", CONTEXT_CASES)
def test_a_context_length_400_ends_the_chain_and_the_query_finishes(tmp_path, capsys, request, body, executor):
    with RawStandin(respond=refuse_after_the_first_tool_call(body)) as standin:
        assert main(chat_args(tmp_path, "ctx", standin.url, "--groups", "G1_tool", "G2_category",
                              *executor_flags(request, executor))) == 0
        assert standin.count("chat/completions") == 4  # a tool call and the refused request, per query: no retry
    out = capsys.readouterr().out
    run_dir = tmp_path / "ctx"
    assert len(answers(run_dir)) == 2 and not (run_dir / "errors.jsonl").exists()
    refused = [s for s in jsonl(run_dir / "steps.jsonl") if s["error"] == CONTEXT_LENGTH]
    assert len(refused) == 2 and all(s["infra_failure"] is None for s in refused)
    assert all("longer than the model's context" in s["detail"] and "HTTP 400" in s["detail"] for s in refused)
    stats = jsonl(run_dir / "queries.jsonl")
    assert [(s["outcome"], s["context_length"]) for s in stats] == [("finished", 1)] * 2
    totals = json.loads((run_dir / "manifest.json").read_text())["totals"]
    assert (totals["finished"], totals["infra_failures"], totals["context_length"]) == (2, 0, 2)
    assert "context length 2: finished queries" in out
    # an outcome in the taxonomy's queries table and on the report's first screen, not only a parse-error row
    queries = taxonomy_tables(read_taxonomy(run_dir))["queries"][1]
    assert ["context length", "1", "1", "2"] in queries and ["infra failures", "0", "0", "0"] in queries
    assert "| context length | 1 | 1 | 2 |" in taxonomy_markdown(read_taxonomy(run_dir))
    assert headline(load_run(run_dir))["context_length"] == 2


def test_a_context_length_400_on_completions_ends_the_query_as_finished(tmp_path, capsys):
    with RawStandin(respond=refuse_after_the_first_tool_call(VLLM_BODY)) as standin:
        args = ["run", "--name", "c", "--out-root", str(tmp_path), "--backend", "openai-completions", "--base-url",
                standin.url, "--groups", "G1_tool", "--quiet"]
        assert main(args) == 0
        assert standin.count("completions") == 1
    [record] = jsonl(tmp_path / "c" / "steps.jsonl")
    assert (record["error"], record["infra_failure"]) == (CONTEXT_LENGTH, None)
    assert json.loads((tmp_path / "c" / "manifest.json").read_text())["totals"]["context_length"] == 1


def test_another_400_stays_a_model_endpoint_failure(tmp_path, capsys):
    other = {"error": {"message": "Unknown parameter: 'frequency_penalty'", "type": "invalid_request_error",
                       "param": "frequency_penalty", "code": "unknown_parameter"}}
    with RawStandin(respond=refuse_after_the_first_tool_call(other)) as standin:
        assert main(chat_args(tmp_path, "o", standin.url, "--groups", "G1_tool")) == 3
    [stats] = jsonl(tmp_path / "o" / "queries.jsonl")
    assert (stats["failure_kind"], stats["context_length"]) == (MODEL_ENDPOINT, 0)


class ContextLimitedBackend:
    """A backend behind tba serve-model whose context holds one request: the second (the first tool call's
    observation added) is over its limit, as hf answers a prompt longer than its positions."""

    name = "scripted"
    model = "limited"

    def __init__(self):
        self.calls = 0

    def complete(self, request: ModelRequest) -> Completion:
        self.calls += 1
        if self.calls > 1:
            return Completion(error="prompt of 40 tokens is longer than the model's context (16 positions)",
                              error_kind=CONTEXT_LENGTH)
        first_call = react_script(ModelRequest(prompt=request.prompt))  # no key: the query's first function
        return Completion(text=first_call, prompt_tokens=1, completion_tokens=1)


def test_serve_model_answers_a_context_limit_as_the_engines_do_and_the_query_finishes(tmp_path):
    # serve-model used to answer 500 here: the client retried and the query ended as a model_endpoint failure
    from runners.serving.openai_server import LoopbackServer, build_app

    backend = ContextLimitedBackend()
    with LoopbackServer(build_app(backend)) as server:
        args = ["run", "--name", "sm", "--out-root", str(tmp_path), "--backend", "openai-completions",
                "--base-url", server.url, "--groups", "G1_tool", "--backend-option", "retries=2", "--quiet"]
        assert main(args) == 0
    assert backend.calls == 2  # the refusal is not retried
    [stats] = jsonl(tmp_path / "sm" / "queries.jsonl")
    assert (stats["outcome"], stats["context_length"]) == ("finished", 1)


def tiny_model(folder: Path, positions: int) -> Path:
    """A randomly initialised two-layer Llama with ``positions`` positions and a word-level tokenizer: a local
    model folder as save_pretrained writes it (nothing downloaded)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    words = ["<unk>", "<s>", "</s>", *(f"w{i}" for i in range(29))]
    core = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", bos_token="<s>", eos_token="</s>")
    config = LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=positions,
                         bos_token_id=1, eos_token_id=2)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_hf_refuses_a_prompt_longer_than_the_models_positions(tmp_path):
    from runners.models.hf import HFBackend

    backend = HFBackend(model=str(tiny_model(tmp_path / "tiny", positions=16)))
    too_long = backend.complete(ModelRequest(prompt=" ".join(["w3"] * 20), max_tokens=4))
    assert too_long.error_kind == CONTEXT_LENGTH and "16 positions" in too_long.error
    assert too_long.prompt_tokens == 20
    # a prompt that fits: generation stops at the model's last position, not max_tokens later
    fits = backend.complete(ModelRequest(prompt=" ".join(["w3"] * 14), max_tokens=8))
    assert fits.error is None and fits.prompt_tokens == 14 and fits.completion_tokens <= 2


# -- a malformed reply ---------------------------------------------------------------------------------------------

MESSAGE = {"role": "assistant", "content": "fine"}


@pytest.mark.parametrize("backend,body,what", [
    ("chat", [], "the body is not a JSON object"),
    ("chat", {"object": "chat.completion"}, "no choices"),
    ("chat", {"choices": ["fine"]}, "no choices"),
    ("chat", {"choices": [{"message": "fine"}]}, "choices[0].message is not an object"),
    ("chat", {"choices": [{"message": {"content": ["a", "b"]}}]}, "choices[0].message.content is not a string"),
    ("chat", {"choices": [{"message": {**MESSAGE, "tool_calls": "Finish"}}]}, "choices[0].message.tool_calls is not a list"),
    ("chat", {"choices": [{"message": MESSAGE}], "usage": {"prompt_tokens": "many"}}, "usage is not token counts"),
    ("completions", {"choices": [{"text": {"t": 1}}]}, "choices[0].text is not a string"),
])
def test_a_malformed_reply_is_a_model_endpoint_failure_naming_the_endpoint(backend, body, what):
    def respond(endpoint, request_body):
        raise RawReply(200, body)

    with RawStandin(respond=respond) as standin:
        if backend == "chat":
            made = OpenAIChatBackend(base_url=standin.url, model=standin.model)
            request = ModelRequest(messages=[{"role": "user", "content": "hi"}])
            path = "chat/completions"
        else:
            made = OpenAICompletionsBackend(base_url=standin.url, model=standin.model)
            request = ModelRequest(prompt="hi")
            path = "completions"
        completion = made.complete(request)
    assert completion.error_kind == MODEL_ENDPOINT
    assert f"POST {standin.url}/{path} answered a malformed reply: {what}" in completion.error


def test_a_malformed_reply_in_a_run_names_the_endpoint(tmp_path):
    def respond(endpoint, body):
        raise RawReply(200, {"choices": [{"message": "not an object"}]})

    with RawStandin(respond=respond) as standin:
        assert main(chat_args(tmp_path, "bad", standin.url, "--groups", "G1_tool")) == 3
    [error] = jsonl(tmp_path / "bad" / "errors.jsonl")
    assert error["failure_kind"] == MODEL_ENDPOINT and standin.url in error["failure_detail"]


# -- Ctrl-C twice, in a real process -------------------------------------------------------------------------------

def test_a_second_ctrl_c_stops_a_real_run_now_and_names_what_was_not_finished(tmp_path):
    args = ["run", "--name", "i", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet", "--concurrency", "2"]
    marker = tmp_path / "marks"
    proc = start_child(tmp_path, marker, "any", *args)  # every model call blocks until the process ends
    watchdog = threading.Timer(120, proc.kill)  # a run that waits for ever fails the test, not the suite
    watchdog.start()
    try:
        wait_for_marks(marker, 2, proc)  # two queries in flight
        proc.send_signal(signal.SIGINT)
        first = ""
        while "Ctrl-C again" not in first:  # the first Ctrl-C says what it waits for
            line = proc.stderr.readline()
            assert line, f"no notice after the first Ctrl-C: {first}"
            first += line
        assert "tba run: Ctrl-C: starting no more queries; waiting for the 2 queries in flight" in first
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()  # the blocked queries never end: only stopping now ends the process
        proc.wait()
    finally:
        watchdog.cancel()
        proc.kill()
    assert proc.returncode == 130
    assert "stopped now; 2 queries in flight were not finished" in rest
    run_dir = tmp_path / "i"
    assert answers(run_dir) == {}
    [session] = json.loads((run_dir / "manifest.json").read_text())["sessions"]
    assert "finished" not in session and session["stopped_now"] is True
    assert sorted(session["not_finished"]) == sorted(f"{g}/{q}" for g, q in ORDER[:2])
    assert session["not_started"] == 4
    assert not lock_path(run_dir).exists()
