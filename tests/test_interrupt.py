"""Ctrl-C during `tba run` on threads: the queries in flight finish, no queued query starts."""

from __future__ import annotations

import os
import signal

import pytest

from runners.config import RunConfig
from runners.models.react_script import react_script
from runners.models.scripted import ScriptedBackend
from runners.run import Runner

TOOLS = "data/sample/toolenv/tools"


def test_ctrl_c_starts_no_queued_query(tmp_path):
    calls = []

    def interrupting(request):
        calls.append(request.key.get("query_id"))
        if len(calls) == 1:  # SIGINT lands in the main thread, waiting for results, as a real Ctrl-C does
            os.kill(os.getpid(), signal.SIGINT)
        return react_script(request)

    cfg = RunConfig(name="r", out_root=str(tmp_path), backend="scripted", dialect="toolllama", tool_root=TOOLS,
                    concurrency=1)
    with pytest.raises(KeyboardInterrupt):
        Runner(cfg, backend=ScriptedBackend(script=interrupting), progress=False).run()
    # the query in flight goes on; the worker may take the next one while the main thread is still raising,
    # but not the 4 after it (before the fix all 6 queued queries ran before Ctrl-C took effect)
    assert len(set(calls)) <= 2
    assert len(list((tmp_path / "r").glob("G*/*.json"))) <= 2
