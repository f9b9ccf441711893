"""Issue 40, bad input on the evidence path: a cache or tool folder holding a FIFO, a link to /dev/zero, a binary
file, a file past the size a reader takes, or a link loop is a clear message naming the file, never a traceback
or a hang; nothing already written is lost. `tba doctor` and `tba run` run as subprocesses bounded by a timeout
(a FIFO blocks its reader forever) and a memory limit (/dev/zero read whole)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SAMPLE_TOOLS = PROJECT / "data" / "sample" / "toolenv" / "tools"
pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))


def tba(*argv, home: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOME": str(home)}  # PYTHONPATH kept: the code under test, not another checkout's
    for name in ("TBA_STB_ROOT", "TBA_TOOL_ROOT", "TBA_JUDGE_URL", "TBA_JUDGE_MODEL"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "runners.cli", *map(str, argv)], cwd=PROJECT, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=_limit_memory, env=env)


def hostile(path: Path, kind: str) -> None:
    """Put a file of ``kind`` at ``path`` (replacing what is there)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "binary":
        path.write_bytes(b"\xff\xfe\x00\x01" * 64)
    elif kind == "huge":
        with open(path, "wb") as handle:  # sparse: past every reader's limit, no disk spent
            handle.truncate(300 << 20)
    elif kind == "loop":
        os.symlink(path.name + ".other", path)
        os.symlink(path.name, path.with_name(path.name + ".other"))
    else:
        raise AssertionError(kind)


KINDS = ("fifo", "zero", "binary", "huge", "loop")


def test_doctor_names_unreadable_tool_documents_and_cache_files_without_hanging(tmp_path):
    from toolbench_adapter.queryset.queries import QuerySet
    from toolbench_adapter.queryset.tool_coverage import tools_of

    tools = tmp_path / "tools"
    used = sorted({t for q in QuerySet(PROJECT / "data" / "stabletoolbench").iter() for t in tools_of(q)})
    for (category, tool), kind in zip(used, KINDS, strict=False):
        hostile(tools / category / f"{tool}.json", kind)
    cache = tmp_path / "cache"
    for number, kind in enumerate(KINDS):
        hostile(cache / "Data" / f"tool{number}_for_Data" / "api.json", kind)
    (cache / "Data" / "fine_for_Data").mkdir(parents=True)
    (cache / "Data" / "fine_for_Data" / "api.json").write_text(json.dumps({"{}": {"error": "", "response": "r"}}))
    done = tba("doctor", "--tool-root", tools, "--cache", cache, home=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    docs = next(line for line in done.stdout.splitlines() if "tool documents" in line)
    assert "0 of 814 tools" in docs and "unreadable, e.g. " in docs and str(tools) in docs
    cache_line = next(line for line in done.stdout.splitlines() if "response cache" in line)
    assert "1 entries in" in cache_line and "files unreadable" in cache_line  # the readable entry is counted
    # the one input reader's words (files/input_files.py): the size refused before reading, the bytes named
    assert "the limit for a cache file" in cache_line and "refused before reading it" in cache_line
    assert "binary file" in cache_line
    assert "not regular files" in done.stderr and "FIFO 1" in done.stderr  # the listing names what it skipped


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_refuses_an_unreadable_tool_document_by_name_before_any_query(tmp_path, kind):
    tools = tmp_path / "tools"
    shutil.copytree(SAMPLE_TOOLS, tools)
    bad = tools / "Weather" / "skycast_lite_weather.json"
    hostile(bad, kind)
    done = tba("run", "--name", "r", "--out-root", tmp_path / "runs", "--backend", "scripted", "--tool-root", tools,
               "--quiet", home=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and str(bad) in done.stderr and "--tool-root" in done.stderr
    assert not list((tmp_path / "runs").glob("r/G*/*.json"))  # before any query


@pytest.mark.parametrize("kind", KINDS)
def test_a_run_on_a_cache_folder_with_an_unreadable_file_serves_it_as_empty_and_says_so(tmp_path, kind):
    cache = tmp_path / "cache"
    bad = cache / "Weather" / "skycast_lite_weather_for_Weather" / "current_conditions.json"
    hostile(bad, kind)
    done = tba("run", "--name", "r", "--out-root", tmp_path / "runs", "--backend", "scripted", "--tool-root",
               SAMPLE_TOOLS, "--cache-dir", cache, "--quiet", home=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert bad.name in done.stderr  # named: skipped from the listing, or unreadable and served as empty
    facts = json.loads((tmp_path / "runs" / "r" / "manifest.json").read_text())["setup_facts"]["tool_responses"]
    assert facts["requests"] == 6 and facts["made_by"]["schema"] == 6  # every call answered (by the simulator)
    if kind in ("binary", "huge"):  # never written over: what was there is still there
        assert bad.stat().st_size == (256 if kind == "binary" else 300 << 20)


def test_a_cache_or_tool_folder_that_is_a_link_loop_is_named_not_a_traceback(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop.name, loop)
    done = tba("run", "--name", "r", "--out-root", tmp_path / "runs", "--backend", "scripted", "--cache-dir", loop,
               "--quiet", home=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{loop}: the cache folder cannot be read" in done.stderr
    done = tba("run", "--name", "r", "--out-root", tmp_path / "runs", "--backend", "scripted", "--tool-root", loop,
               "--quiet", home=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr and str(loop) in done.stderr, done.stderr
    done = tba("doctor", "--tool-root", loop, "--cache", loop, home=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stdout.count(f"{loop}: no such folder") == 2, done.stdout
