"""A `tba merge` killed mid-way (SIGKILL: no cleanup runs) leaves its hidden staging folder beside --out; the
next merge into the same --out removes it and succeeds, and leaves alone one whose merge is still alive."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

from runners.cli import main

# runs `tba merge` in a child process that stops for good half-way, after the shard files were copied into
# its staging folder and before the merged folder is renamed into place, and says so through a marker file
STOPPED_MERGE = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import runners.execution.merge
    from runners.cli import main

    def stop_here(staging):
        Path(sys.argv[1]).write_text(str(staging))
        time.sleep(3600)

    runners.execution.merge.collect_steps = stop_here
    main(sys.argv[2:])
""")


def run_args(tmp_path, name, *extra):
    return ["run", "--name", name, "--out-root", str(tmp_path), "--backend", "scripted", "--dialect",
            "openai-tools", "--quiet", *extra]


def two_shards(tmp_path):
    for shard in ("1/2", "2/2"):
        assert main(run_args(tmp_path, f"s{shard[0]}", "--shard", shard)) == 0
    return tmp_path / "s1", tmp_path / "s2"


def test_a_killed_merge_leaves_nothing_after_the_next_merge(tmp_path, project_root, capsys):
    s1, s2 = two_shards(tmp_path)
    out, marker = tmp_path / "all", tmp_path / "stopped"
    proc = subprocess.Popen([sys.executable, "-c", STOPPED_MERGE, str(marker), "merge", str(s1), str(s2), "--out",
                             str(out)], cwd=project_root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists(), proc.stderr.read().decode() if proc.poll() is not None else "the merge never got there"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    left = list(tmp_path.glob(".all.merging-*"))
    assert [str(p) for p in left] == [marker.read_text()] and not out.exists()  # what a kill leaves
    assert any(left[0].rglob("*.json"))  # half-way: the shard files were copied

    capsys.readouterr()
    assert main(["merge", str(s1), str(s2), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"removed {left[0]}, the staging folder of a merge that was killed (pid {proc.pid})" in err
    assert not list(tmp_path.glob(".all.merging-*"))  # nothing left behind
    assert len(list(out.glob("*/*.json"))) == 6


def test_the_staging_folder_of_a_live_merge_is_left_alone(tmp_path, capsys):
    s1, s2 = two_shards(tmp_path)
    live = tmp_path / f".all.merging-{os.getpid()}@{socket.gethostname()}-abc123"  # this test process is alive
    live.mkdir()
    unknown = tmp_path / ".all.merging-k2j4h5"  # an older staging name: its owner cannot be checked
    unknown.mkdir()
    capsys.readouterr()
    assert main(["merge", str(s1), str(s2), "--out", str(tmp_path / "all")]) == 0
    assert live.is_dir() and unknown.is_dir()
    assert f"{unknown} is the staging folder of another merge" in capsys.readouterr().err
