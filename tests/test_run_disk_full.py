"""Issue 21's minor list: a full disk during `tba run` is no traceback. The run stops starting queries (as a first
Ctrl-C does), records its session as interrupted where it still can, exits 2 naming the path and the command that
goes on; the rerun (space freed) completes the run with whole files: no torn line in steps.jsonl or queries.jsonl.

The full disk is simulated inside this process: from the third query's step records on, every write of the run
fails with ENOSPC (the steps.jsonl append after writing half its bytes, as a real ENOSPC can), the answer and
step files and the queries.jsonl appends included."""

from __future__ import annotations

import errno
import json
import os
from collections import Counter
from pathlib import Path

import pytest

import runners.execution.query as query_module
import runners.execution.runner as runner_module
from runners.cli import main
from runners.config import RunConfig, select_queries
from runners.execution.resume import drop_torn_tail
from toolbench_adapter.files.fileio import AppendFiles, output_path_error

ORDER = [(q.group, q.query_id) for q in select_queries(RunConfig(name="x"))]


def enospc(path) -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


class FullDisk:
    """Fills up at the ``after``-th steps.jsonl append (which writes half its bytes, then fails); from then on
    every write of the run fails. ``manifest``: whether the manifest can still be written (a few bytes freed)."""

    def __init__(self, monkeypatch, after: int = 3, manifest: bool = False):
        self.appends = 0
        self.full = False
        real_append = AppendFiles.append
        disk = self

        def append(files, path, data):  # the runner's appends: the after-th steps.jsonl one writes half, then fails
            if not disk.full and Path(path).name == "steps.jsonl":
                disk.appends += 1
                if disk.appends >= after:
                    disk.full = True
                    real_append(files, path, data[: len(data) // 2])
            if disk.full:
                raise enospc(path)
            real_append(files, path, data)

        def guarded(real):
            def write(path, *args, **kwargs):
                if disk.full:
                    raise output_path_error(path, enospc(path))
                return real(path, *args, **kwargs)
            return write

        monkeypatch.setattr(AppendFiles, "append", append)
        for name in ("write_json_atomic", "write_text_atomic"):
            monkeypatch.setattr(query_module, name, guarded(getattr(query_module, name)))
        if not manifest:
            monkeypatch.setattr(runner_module, "write_json_atomic", guarded(runner_module.write_json_atomic))


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]  # raises on a torn line


@pytest.mark.parametrize("manifest", [False, True], ids=["manifest-unwritable", "manifest-written"])
def test_a_full_disk_stops_the_run_with_exit_2_and_the_rerun_completes_it(tmp_path, capsys, monkeypatch, manifest):
    """Was: OSError ENOSPC from Runner._append / publish_steps: a traceback, exit 1, a torn steps.jsonl."""
    args = ["run", "--name", "d", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    run_dir = tmp_path / "d"
    with monkeypatch.context() as patch:
        FullDisk(patch, manifest=manifest)
        assert main(args) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"disk full at {run_dir / 'steps.jsonl'}" in err and "no query started after it" in err
    assert "fix: free space and rerun tba run --name d --out-root" in err
    assert len(list(run_dir.glob("G*/*.json"))) == 2  # the two queries before the disk filled
    assert not (run_dir / "steps.jsonl").read_text().endswith("\n")  # the torn append is there
    [session] = json.loads((run_dir / "manifest.json").read_text())["sessions"]
    assert "finished" not in session  # tba evaluate reads it as interrupted
    if manifest:
        assert session["interrupted"] and session["not_finished"] == [f"{g}/{q}" for g, q in ORDER[2:3]]
        assert session["not_started"] == 3
    # space again: the same command goes on and ends with every answer and whole files
    assert main(args) == 0
    assert len(list(run_dir.glob("G*/*.json"))) == 6
    steps = (run_dir / "steps.jsonl").read_text()
    assert steps.endswith("\n") and len(set(steps.splitlines())) == len(steps.splitlines())
    assert {(s["group"], s["query_id"]) for s in lines(run_dir / "steps.jsonl")} == set(ORDER)
    assert Counter((s["group"], s["query_id"]) for s in lines(run_dir / "queries.jsonl")) == Counter(ORDER)
    totals = json.loads((run_dir / "manifest.json").read_text())["totals"]
    assert (totals["finished"], totals["infra_failures"]) == (6, 0)


def test_a_full_disk_on_queries_jsonl_alone_keeps_the_answer_and_the_rerun_mends_its_line(tmp_path, capsys,
                                                                                        monkeypatch):
    """The answer file was written, its queries.jsonl line was not: the query is finished, the rerun adds the line."""
    args = ["run", "--name", "q", "--out-root", str(tmp_path), "--backend", "scripted", "--quiet"]
    real_append, appends = AppendFiles.append, []

    def failing_append(files, path, data):
        if Path(path).name == "queries.jsonl":
            appends.append(path)
            if len(appends) == 3:
                real_append(files, path, b'{"group": "G1_')  # torn, then the disk is full
                raise enospc(path)
        real_append(files, path, data)

    with monkeypatch.context() as patch:
        patch.setattr(AppendFiles, "append", failing_append)
        assert main(args) == 2
    err = capsys.readouterr().err
    assert f"disk full at {tmp_path / 'q' / 'queries.jsonl'}" in err and "Traceback" not in err
    assert len(list((tmp_path / "q").glob("G*/*.json"))) == 3  # the third query's answer file is whole
    assert main(args) == 0
    assert Counter((s["group"], s["query_id"]) for s in lines(tmp_path / "q" / "queries.jsonl")) == Counter(ORDER)


def test_drop_torn_tail_keeps_whole_lines(tmp_path):
    path = tmp_path / "queries.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c"')
    drop_torn_tail(path)
    assert path.read_text() == '{"a": 1}\n{"b": 2}\n'
    drop_torn_tail(path)
    assert path.read_text() == '{"a": 1}\n{"b": 2}\n'
    path.write_text('{"c"')
    drop_torn_tail(path)
    assert path.read_text() == ""
