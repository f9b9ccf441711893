"""Ctrl-C during `tba run` on threads: the queries in flight finish, no queued query starts."""

from __future__ import annotations

import json
import os
import signal
import threading

import pytest

from runners.config import RunConfig
from runners.execution.runner import Runner
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend

TOOLS = "data/sample/toolenv/tools"


def interrupting_at(query_number: int) -> tuple:
    """A scripted model that sends this process SIGINT (as Ctrl-C does: it lands in the main thread, waiting for
    results) when the ``query_number``-th query asks for its first turn; that turn is still answered. Returns the
    script and the ids of the queries that asked, in order."""
    seen: list = []

    def script(request):
        query_id = request.key.get("query_id")
        if query_id not in seen:
            seen.append(query_id)
            if len(seen) == query_number:
                os.kill(os.getpid(), signal.SIGINT)
        return react_script(request)

    return script, seen


def test_ctrl_c_starts_no_queued_query(tmp_path):
    interrupting, calls = interrupting_at(1)

    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama", tool_root=TOOLS,
                    concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        Runner(cfg, backend=ScriptedBackend(script=interrupting), progress=False).run()
    # the query in flight goes on; the worker may take the next one while the main thread is still raising,
    # but not the 4 after it (before the fix all 6 queued queries ran before Ctrl-C took effect)
    assert len(set(calls)) <= 2
    assert len(list((tmp_path / "r").glob("G*/*.json"))) <= 2


def test_the_first_ctrl_c_says_what_it_waits_for_and_a_second_stops_now(tmp_path, monkeypatch, capfd):
    """Two queries in flight and slow: the first Ctrl-C names them and waits; a second one (sent here as the
    notice is printed) stops at once, the two recorded as not finished and redone by the next run."""
    from runners.execution import interrupt
    from runners.execution.interrupt import StopNow

    release = threading.Event()
    started = threading.Barrier(2)

    def slow(request):
        started.wait(timeout=30)  # both queries in flight before the first Ctrl-C
        if request.key.get("query_id") == 900001:
            os.kill(os.getpid(), signal.SIGINT)
        release.wait(timeout=60)
        return react_script(request)

    announced = interrupt.announce

    def announce_and_press_again(in_flight, who="tba run"):
        announced(in_flight, who)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(interrupt, "announce", announce_and_press_again)
    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama", tool_root=TOOLS,
                    concurrency=2)
    try:
        with pytest.raises(StopNow) as stopped:
            Runner(cfg, backend=ScriptedBackend(script=slow), progress=False).run()
        assert "tba run: Ctrl-C: starting no more queries; waiting for the 2 queries in flight" in capfd.readouterr().err
        manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
        [session] = manifest["sessions"]
        assert "finished" not in session and session["stopped_now"] is True and session["interrupted"]
        assert sorted(session["not_finished"]) == ["G1_category/900003", "G1_instruction/900001"]
        assert sorted(stopped.value.in_flight) == sorted(session["not_finished"])
        assert session["not_started"] == 4 and not list((tmp_path / "r").glob("G*/*.json"))
    finally:
        release.set()


def test_a_first_ctrl_c_records_the_session_as_interrupted_with_its_counts(tmp_path):
    interrupting, _ = interrupting_at(1)

    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama", tool_root=TOOLS,
                    concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        Runner(cfg, backend=ScriptedBackend(script=interrupting), progress=False).run()
    [session] = json.loads((tmp_path / "r" / "manifest.json").read_text())["sessions"]
    assert "finished" not in session and session["interrupted"] and session["stopped_now"] is False
    done = len(list((tmp_path / "r").glob("G*/*.json")))
    assert session["queries_finished"] == done >= 1 and session["not_started"] == 6 - done
    assert len((tmp_path / "r" / "steps.jsonl").read_text().splitlines()) > 0


def test_under_tba_eval_the_notice_names_tba_eval_and_counts_in_words(tmp_path, capfd):
    """Issue 41: under `tba eval`, Ctrl-C said "tba run:" (a command the user never typed) and "1 queries"."""
    from runners.execution.interrupt import notice, queries

    interrupting, _ = interrupting_at(1)

    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama", tool_root=TOOLS,
                    concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        Runner(cfg, backend=ScriptedBackend(script=interrupting), progress=False,
               command="tba eval --name r --backend scripted").run()
    err = capfd.readouterr().err
    assert "tba eval: Ctrl-C: starting no more queries; waiting for the 1 query in flight" in err
    assert "(it is then not finished" in err and "tba run" not in err and "1 queries" not in err
    assert (queries(1), queries(2), queries(0)) == ("1 query", "2 queries", "0 queries")
    assert notice(3).startswith("tba run: Ctrl-C") and "those 3 are then not finished" in notice(3)
